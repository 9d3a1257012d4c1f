import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freePort, portAnswers } from '../../../lib/runtime/azurite';
import { TaskHubStore, type WorkMessage } from '../../../lib/runtime/durable/store';
import { trackPid } from '../../support/processes';

export const ROOT = path.resolve(__dirname, '../../..');
export const CLI = path.join(ROOT, 'dist/lib/runtime/cli.js');
export const APP = path.join(ROOT, 'test/fixtures/durable-app');

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The local runtime (`fnhost start`) hosting the durable fixture app, as a child process. */
export class RuntimeProcess {
  child?: ChildProcess;
  output = '';
  port = 0;

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string> = {},
  ) {}

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get api(): string {
    return `${this.base}/runtime/webhooks/durabletask`;
  }

  /**
   * Start the runtime on `port`, or on a free one picked just before: a port another process took between the pick
   * and the bind (other suites pick ports too) is tried again on a new one.
   */
  async start(port?: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const mark = this.output.length;
      try {
        return await this.startOnce(port);
      } catch (err) {
        if (port !== undefined || attempt >= 4 || !/EADDRINUSE/.test(this.output.slice(mark))) throw err;
      }
    }
  }

  private async startOnce(port?: number): Promise<void> {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first.`);
    this.port = port ?? (await freePort());
    const child = spawn(process.execPath, [CLI, 'start', '--app', APP, '--port', String(this.port), '--data-dir', this.dataDir], {
      env: { ...process.env, AzureWebJobsStorage: process.env.TEST_STORAGE_CONNECTION_STRING ?? '', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackPid(child.pid);
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child = child;
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`runtime exited: ${this.output}`);
      if (/Now listening on/.test(this.output) && (await portAnswers('127.0.0.1', this.port))) return;
      if (i > 600) throw new Error(`runtime did not start: ${this.output}`);
      await sleep(50);
    }
  }

  /** kill -9 */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15000);
    await exited;
    clearTimeout(t);
  }

  async start202(name: string, id: string, input?: unknown): Promise<Response> {
    return fetch(`${this.api}/orchestrators/${name}/${encodeURIComponent(id)}`, {
      method: 'POST',
      body: input === undefined ? undefined : JSON.stringify(input),
      headers: { 'content-type': 'application/json' },
    });
  }

  async status(id: string, query = ''): Promise<{ status: number; body: Record<string, unknown> }> {
    const r = await fetch(`${this.api}/instances/${encodeURIComponent(id)}${query}`);
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  /** The task hub's name, as the runtime logs it when the hub starts. */
  get hubName(): string {
    const m = /Durable task hub '([^']+)' started/.exec(this.output);
    if (!m) throw new Error(`the runtime did not log its task hub's name: ${this.output}`);
    return m[1];
  }

  /**
   * The orchestration messages waiting in the task hub's own storage (`<hub>Work`, partition `o`) for one
   * instance, read with the runtime's own store: a message is there from the moment it is accepted until an
   * episode that consumed it is committed.
   */
  async storedMessages(instanceId: string): Promise<WorkMessage[]> {
    const store = new TaskHubStore(process.env.TEST_STORAGE_CONNECTION_STRING ?? '', this.hubName);
    return (await store.listWork('o')).filter((m) => m.instanceId === instanceId);
  }

  /** Poll until the instance reaches one of `statuses` (no timing assertion: jest's timeout bounds it). */
  async waitFor(id: string, statuses: string[] = ['Completed', 'Failed', 'Terminated']): Promise<Record<string, unknown>> {
    for (;;) {
      const s = await this.status(id);
      if (s.status !== 404 && statuses.includes(String(s.body.runtimeStatus))) return s.body;
      await sleep(50);
    }
  }
}
