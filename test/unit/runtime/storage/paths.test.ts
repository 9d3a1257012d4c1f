import { bindingData, resolveTemplate } from '../../../../lib/runtime/storage/bindingData';
import { compileBlobPath } from '../../../../lib/runtime/storage/blobTrigger';

describe('blob trigger paths and binding expressions', () => {
  it('compiles container/prefix{name}.ext into a listing prefix and captures', () => {
    const p = compileBlobPath('in/reports-{name}.csv', 'f');
    expect(p).toMatchObject({ container: 'in', prefix: 'reports-', names: ['name'] });
    expect(p.regex.exec('reports-2024/jan.csv')?.[1]).toBe('2024/jan');
    expect(p.regex.test('reports-x.txt')).toBe(false);
    expect(compileBlobPath('in', 'f').regex.test('any/thing')).toBe(true);
    expect(() => compileBlobPath('{c}/x', 'f')).toThrow("Function 'f': the blob trigger path '{c}/x' must start with a container name.");
  });

  it('resolves {names} from trigger metadata first, then JSON payload properties, case-insensitively', () => {
    const data = bindingData(
      {
        inputData: [{ name: 'msg', data: { string: JSON.stringify({ id: 'payload-id', key: 'k1', nested: { a: 1 } }) } }],
        triggerMetadata: { Id: { string: 'message-id' }, DequeueCount: { int: 2 } },
      },
      'msg',
    );
    expect(resolveTemplate('out/{id}-{key}-{dequeueCount}-{nested.a}', data)).toBe('out/message-id-k1-2-1');
    expect(resolveTemplate('x/{rand-guid}', data)).toMatch(/^x\/[0-9a-f-]{36}$/);
    expect(() => resolveTemplate('x/{missing}', data)).toThrow("No value for named parameter 'missing'.");
  });
});
