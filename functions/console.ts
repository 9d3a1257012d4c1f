import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { anonymous } from '../lib/auth/authorize';
import { currentAuth } from '../lib/auth/authenticate';
import { answerConsole, consoleConfig } from '../lib/console/serve';
import { ConsoleFiles } from '../lib/console/static';

const files = new ConsoleFiles();

/**
 * The web console: a single-page app over the Admin API, served at /console (outside the `api` route prefix:
 * the `~/` of the route, see docs/console.md). Anonymous: the page holds no data; it signs the user in and
 * calls /api with the user's token.
 */
async function getConsole(request: HttpRequest): Promise<HttpResponseInit> {
  const url = new URL(request.url);
  const at = url.pathname.toLowerCase().indexOf('/console');
  const base = url.pathname.slice(0, at) + '/console/';
  if (url.pathname.slice(at).toLowerCase() === '/console') {
    return { status: 301, headers: { location: base + url.search, 'cache-control': 'no-cache' } };
  }
  const auth = currentAuth();
  const config = consoleConfig({ authority: auth?.config.jwt.authority, developmentIssuer: !!auth?.config.devIssuer.enabled, roles: auth?.config.roles ?? {} });
  const answer = answerConsole(files, request.params.path ?? '', {
    versioned: url.searchParams.has('v'),
    ifNoneMatch: request.headers.get('if-none-match'),
    base,
    config,
    query: url.search.slice(1),
  });
  return { status: answer.status, headers: answer.headers, body: answer.body };
}

app.http('getConsole', { route: '~/console/{*path}', methods: ['GET'], authLevel: 'anonymous', handler: anonymous(getConsole) });
