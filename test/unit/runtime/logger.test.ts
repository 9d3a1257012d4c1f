import { Logger } from '../../../lib/runtime/logger';

function capture(options: ConstructorParameters<typeof Logger>[0] = {}) {
  const lines: string[] = [];
  const logger = new Logger({ ...options, write: (l) => lines.push(l) });
  return { logger, lines };
}

describe('runtime logger', () => {
  it('filters by the most specific host.json category', () => {
    const { logger } = capture({ logLevel: { default: 'Warning', Function: 'Information', 'Function.noisy.User': 'Error', 'Host.*': 'Debug' } });
    expect(logger.enabled('information', 'Function.hello')).toBe(true);
    expect(logger.enabled('information', 'Function.hello.User')).toBe(true);
    expect(logger.enabled('warning', 'Function.noisy.User')).toBe(false);
    expect(logger.enabled('error', 'Function.noisy.User')).toBe(true);
    expect(logger.enabled('debug', 'Host.Startup')).toBe(true);
    expect(logger.enabled('information', 'Worker')).toBe(false);
    expect(logger.enabled('information', 'Functional')).toBe(false);
  });

  it('writes readable lines or JSON lines', () => {
    const text = capture();
    text.logger.info('Host.Startup', 'hello', { a: 1 });
    expect(text.lines[0]).toMatch(/^\[\d{4}-\d\d-\d\dT[^\]]+Z\] hello\n$/);
    const json = capture({ format: 'json' });
    json.logger.warn('Function.x.User', 'careful', { invocationId: 'id-1' });
    expect(JSON.parse(json.lines[0])).toMatchObject({ level: 'Warning', category: 'Function.x.User', message: 'careful', invocationId: 'id-1' });
  });

  it('prints console blocks as is on a terminal', () => {
    const { logger, lines } = capture({ logLevel: { default: 'None' } });
    logger.plain('Host.Startup', 'Functions:');
    logger.info('Host.Startup', 'filtered out');
    expect(lines).toEqual(['Functions:\n']);
  });
});
