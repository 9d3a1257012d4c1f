import { execFile } from 'node:child_process';

export interface CurlAnswer {
  status: number;
  headers: Record<string, string>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/**
 * One HTTP exchange with curl (GSS-API built in): `--negotiate -u :` uses the Kerberos ticket in negotiateEnv's
 * KRB5CCNAME (and its KRB5_CONFIG). A JSON body is sent as application/json.
 */
export async function curl(
  url: string,
  options: { method?: string; negotiateEnv?: Record<string, string>; headers?: Record<string, string>; json?: unknown } = {},
): Promise<CurlAnswer> {
  const args = ['-s', '-i', '-X', options.method ?? 'GET'];
  if (options.negotiateEnv) args.push('--negotiate', '-u', ':');
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (options.json !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', JSON.stringify(options.json));
  args.push(url);
  const { stdout, code, stderr } = await run('curl', args, options.negotiateEnv ?? {});
  if (code !== 0) throw new Error(`curl failed (${code}): ${stderr}`);
  // With --negotiate curl prints the 401 of the first leg too: keep the last response.
  const responses = stdout.split(/\r\n\r\n(?=HTTP\/)/);
  const last = responses[responses.length - 1];
  const [head, ...rest] = last.split('\r\n\r\n');
  const lines = head.split('\r\n');
  const status = Number(lines[0].split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  const text = rest.join('\r\n\r\n');
  return { status, headers, body: text ? JSON.parse(text) : {} };
}
