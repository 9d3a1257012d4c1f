#!/usr/bin/env node
// Prints a Bearer token from the embedded development issuer (Development only; see docs/authentication.md).
//   npm run token -- --role Admin [--user alice@contoso.com] [--data-dir .data] [--json]
// It reads <dataDir>/dev-issuer.json, written by the running service, and calls the issuer's token endpoint
// (client_credentials), so the service must be running (`npm start`).
'use strict';
const { readFileSync } = require('node:fs');
const path = require('node:path');

function arg(name) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith('--')) fail(`--${name} needs a value.`);
  return v;
}

function fail(message) {
  console.error(`token: ${message}`);
  process.exit(1);
}

async function main() {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log('Usage: npm run token -- [--role Admin|Operator|Viewer] [--user name@domain] [--data-dir DIR] [--json]');
    return;
  }
  const role = arg('role') ?? 'Admin';
  if (!/^(admin|operator|viewer)$/i.test(role)) fail(`--role must be Admin, Operator or Viewer, not '${role}'.`);
  const dataDir = arg('data-dir') ?? process.env.Service__DataDir ?? '.data';
  const file = path.resolve(dataDir, 'dev-issuer.json');
  let info;
  try {
    info = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    fail(
      `${file} not found: start the service in Development (AZURE_FUNCTIONS_ENVIRONMENT=Development, no Authentication__Jwt__Authority) with npm start first.`,
    );
  }
  const form = new URLSearchParams({ grant_type: 'client_credentials', role });
  const user = arg('user');
  if (user) form.set('username', user);
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(info.clientSecret)}`).toString('base64');
  let res;
  try {
    res = await fetch(info.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: form.toString(),
    });
  } catch (err) {
    fail(`the development issuer at ${info.issuer} does not answer (${err.cause?.code ?? err.message}): is the service running (npm start)?`);
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.access_token) fail(`the development issuer answered ${res.status} ${body.error ?? ''} ${body.error_description ?? ''}`.trim());
  if (process.argv.includes('--json')) console.log(JSON.stringify({ ...body, issuer: info.issuer, audience: info.audience }, null, 2));
  else console.log(body.access_token);
}

main().catch((err) => fail(err.message));
