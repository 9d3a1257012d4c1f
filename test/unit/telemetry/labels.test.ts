import { HttpRequest, InvocationContext } from '@azure/functions';
import { methodLabel, routeLabel, UNMATCHED_ROUTE } from '../../../lib/telemetry/labels';

describe('route label', () => {
  const http = (route?: unknown) => ({ trigger: { type: 'httpTrigger', route }, functionName: 'getConnector' });

  it('is the registered template, never a path', () => {
    expect(routeLabel(http('connectors/{id}'))).toBe('connectors/{id}');
    expect(routeLabel(http('/runs/{id}/'))).toBe('runs/{id}');
  });

  it('drops parameter constraints, optional marks and catch-all stars', () => {
    expect(routeLabel(http('connectors/{id:guid}'))).toBe('connectors/{id}');
    expect(routeLabel(http('items/{id?}'))).toBe('items/{id}');
    expect(routeLabel(http('files/{*rest}'))).toBe('files/{rest}');
    expect(routeLabel(http('a/{x:int:min(1)}/b/{y=3}'))).toBe('a/{x}/b/{y}');
  });

  it('is the function name for a registration with no route, as the host serves it', () => {
    expect(routeLabel(http(undefined))).toBe('getConnector');
    expect(routeLabel(http('  '))).toBe('getConnector');
  });

  it('is unmatched for anything that is not an HTTP registration', () => {
    expect(routeLabel({})).toBe(UNMATCHED_ROUTE);
    expect(routeLabel({ trigger: { type: 'timerTrigger' }, functionName: 'syncDispatcher' })).toBe(UNMATCHED_ROUTE);
    expect(routeLabel({ trigger: { type: 'httpTrigger' } })).toBe(UNMATCHED_ROUTE);
    // A bare InvocationContext (a handler called directly in a test) has an unknown trigger.
    expect(routeLabel({ trigger: new InvocationContext().options.trigger, functionName: 'x' })).toBe(UNMATCHED_ROUTE);
  });
});

describe('method label', () => {
  it('keeps the HTTP methods, upper-cased, and folds the rest into OTHER', () => {
    expect(methodLabel('get')).toBe('GET');
    expect(methodLabel(new HttpRequest({ method: 'DELETE', url: 'http://127.0.0.1/api/x' }).method)).toBe('DELETE');
    expect(methodLabel('PROPFIND')).toBe('OTHER');
    expect(methodLabel('GET /etc/passwd')).toBe('OTHER');
    expect(methodLabel(undefined)).toBe('OTHER');
  });
});
