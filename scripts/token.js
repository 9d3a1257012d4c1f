#!/usr/bin/env node
// Prints a Bearer token from the embedded development issuer (Development only; see docs/authentication.md).
//   npm run token -- --role Admin [--user alice@contoso.com] [--data-dir .data] [--json]
//   npm run -s token -- --secret     (prints the sign-in secret the console's development sign-in form asks for)
// It reads <dataDir>/dev-issuer.json (the issuer's address) and <dataDir>/dev-issuer.secret (the sign-in secret,
// readable by the data folder's owner only), both written by the running service, and calls the issuer's
// token endpoint (client_credentials) with the secret, so the service must be running (`npm start`).
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
    console.log('Usage: npm run token -- [--role Admin|Operator|Viewer] [--user name@domain] [--data-dir DIR] [--json | --secret]');
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
  const secretFile = path.resolve(dataDir, 'dev-issuer.secret');
  let secret;
  try {
    secret = readFileSync(secretFile, 'utf8').trim();
  } catch (err) {
    fail(
      err.code === 'EACCES'
        ? `${secretFile} cannot be read: only the user that owns the data folder (the one running the service) gets development tokens.`
        : `${secretFile} not found: start the service in Development (npm start) first.`,
    );
  }
  if (process.argv.includes('--secret')) {
    console.log(secret);
    return;
  }
  const form = new URLSearchParams({ grant_type: 'client_credentials', role });
  const user = arg('user');
  if (user) form.set('username', user);
  const basic = Buffer.from(`${encodeURIComponent(info.clientId)}:${encodeURIComponent(secret)}`).toString('base64');
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
  if (!res.ok || !body.access_token)
    fail(`the development issuer answered ${res.status} ${body.error ?? ''}: ${body.detail ?? body.error_description ?? ''}`.trim());
  if (process.argv.includes('--json')) console.log(JSON.stringify({ ...body, issuer: info.issuer, audience: info.audience }, null, 2));
  else console.log(body.access_token);
}

main().catch((err) => fail(err.message));
