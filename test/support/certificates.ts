import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A self-signed certificate for localhost and 127.0.0.1 (RSA 2048, valid two days), the key and the certificate
 * written as PEM to `keyFile` and `certFile`: what the slapd and PostgreSQL fixtures serve TLS with.
 */
export async function selfSignedLocalhost(keyFile: string, certFile: string): Promise<void> {
  await run(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { timeout: 120_000 },
  );
}
