import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { answerConsole, consoleConfig, type ConsoleConfig } from '../../../lib/console/serve';
import { ConsoleFiles } from '../../../lib/console/static';
import { SettingsReader } from '../../../lib/core/config';

describe('console file serving', () => {
  let dir: string;
  let files: ConsoleFiles;
  const config: ConsoleConfig = {
    authority: 'http://127.0.0.1:4000',
    clientId: 'meshsync-console',
    scope: 'openid',
    apiBase: '/api',
    developmentIssuer: true,
    roles: {},
  };
  const opts = { versioned: false, ifNoneMatch: null, base: '/console/', config };

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'console-files-'));
    writeFileSync(
      path.join(dir, 'index.html'),
      '<html><head><base href="/console/"></head><body><form action="signin" method="get"><button>Sign in</button></form></body></html>',
    );
    writeFileSync(path.join(dir, 'app.js'), 'console.log(1)');
    writeFileSync(path.join(dir, 'app.css'), 'body{}');
    writeFileSync(path.join(dir, 'secret.pem'), 'not served: no known type');
    mkdirSync(path.join(dir, 'img'));
    writeFileSync(path.join(dir, 'img', 'logo.svg'), '<svg/>');
    files = new ConsoleFiles(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves files with their content type; versioned assets are immutable, the rest revalidated', () => {
    const js = answerConsole(files, 'app.js', { ...opts, versioned: true });
    expect(js).toMatchObject({
      status: 200,
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(answerConsole(files, 'app.css', opts).headers).toMatchObject({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache' });
    expect(answerConsole(files, 'img/logo.svg', opts).headers['content-type']).toBe('image/svg+xml');
    const again = answerConsole(files, 'app.js', { ...opts, ifNoneMatch: js.headers.etag });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
  });

  it('answers index.html for deep links (never cached for good), 404 for a missing file or a path out of the folder', () => {
    for (const rel of ['', 'mesh', 'mesh/0f8fad5b-d9cb-469f-a165-70867728950e', 'runs/x']) {
      const a = answerConsole(files, rel, { ...opts, versioned: true });
      expect({ rel, status: a.status, type: a.headers['content-type'], cache: a.headers['cache-control'] }).toEqual({
        rel,
        status: 200,
        type: 'text/html; charset=utf-8',
        cache: 'no-cache',
      });
    }
    for (const rel of ['nothing.js', 'secret.pem', '../package.json', 'img/../../x', 'a\\b'])
      expect({ rel, status: answerConsole(files, rel, opts).status }).toEqual({ rel, status: 404 });
  });

  it('rewrites the base of index.html when served under another path', () => {
    const a = answerConsole(files, 'mesh', { ...opts, base: '/api/console/' });
    expect(String(a.body)).toContain('<base href="/api/console/">');
  });

  it("carries a deep link's page and query in the pre-script Sign in form, escaped; the overview and sign-in pages carry none", () => {
    const deep = answerConsole(files, 'mesh/0f8f', { ...opts, query: 'q=a"b<c>&x=1' });
    expect(String(deep.body)).toContain(
      '<form action="signin" method="get"><input type="hidden" name="returnTo" value="mesh/0f8f?q=a&quot;b&lt;c&gt;&amp;x=1"><button>',
    );
    for (const rel of ['', 'index.html', 'signin', 'callback'])
      expect({ rel, body: String(answerConsole(files, rel, { ...opts, query: 'returnTo=runs' }).body) }).not.toMatchObject({
        body: expect.stringContaining('type="hidden"'),
      });
    // Each page has its own ETag: a cached page never comes back with another page's returnTo.
    const tags = ['mesh', 'runs', ''].map((rel) => answerConsole(files, rel, opts).headers.etag);
    expect(new Set(tags).size).toBe(3);
    expect(answerConsole(files, 'mesh', { ...opts, ifNoneMatch: tags[0] }).status).toBe(304);
  });

  it('allows the page to talk to its origin and the authority only; config.json is never cached', () => {
    const a = answerConsole(files, 'config.json', opts);
    expect(a.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(String(a.body))).toEqual(config);
    expect(a.headers['content-security-policy']).toContain("connect-src 'self' http://127.0.0.1:4000;");
    expect(a.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('answers 503 naming the build when the console was not built', () => {
    const empty = new ConsoleFiles(path.join(dir, 'missing'));
    const a = answerConsole(empty, '', opts);
    expect(a.status).toBe(503);
    expect(String(a.body)).toContain('npm run build');
  });

  it('reads Console__ClientId and Console__Scope, with the development issuer client by default', () => {
    const roles = { Admin: ['Service.Admin'] };
    expect(consoleConfig({ authority: 'http://127.0.0.1:4000', developmentIssuer: true, roles }, new SettingsReader({}))).toMatchObject({
      clientId: 'meshsync-console',
      scope: 'openid',
      roles,
    });
    const prod = consoleConfig(
      { authority: 'https://login.example/t/v2.0', developmentIssuer: false, roles },
      new SettingsReader({ Console__ClientId: 'abc', Console__Scope: 'openid api://meshsync/access_as_user' }),
    );
    expect(prod).toMatchObject({
      authority: 'https://login.example/t/v2.0',
      clientId: 'abc',
      scope: 'openid api://meshsync/access_as_user',
      developmentIssuer: false,
    });
    expect(consoleConfig({ authority: undefined, developmentIssuer: false, roles }, new SettingsReader({})).clientId).toBeNull();
  });
});
