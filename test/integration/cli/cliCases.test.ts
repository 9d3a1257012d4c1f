import { execFileSync } from 'node:child_process';
import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, rule, runImport, sourceRules, writeCsv } from '../sync/syncSupport';
import { CLI, meshsync, newHome } from './cliSupport';

/**
 * `meshsync cases` against a real service: an HR file and a second file connector that opted in to correlation
 * (its entries without a key, a name twin, a typo). `cases ls|show|decide` name the connector and the case by
 * name; `cases work` runs as a real process on a terminal (tmux): the test reads the screen and presses keys, and
 * the decisions land in the service.
 */
jest.setTimeout(300_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real terminal (tmux, a socket of its own) running `meshsync args...`: read its screen, press keys. */
class Terminal {
  private readonly socket = `meshsync-cases-${process.pid}-${Date.now()}`;
  constructor(args: string[], env: Record<string, string>) {
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const envText = Object.entries(env)
      .map(([k, v]) => `${k}=${quote(v)}`)
      .join(' ');
    const command = `env ${envText} ${quote(process.execPath)} ${quote(CLI)} ${args.map(quote).join(' ')}; echo EXIT=$?; sleep 600`;
    this.tmux('new-session', '-d', '-s', 'cli', '-x', '140', '-y', '40', command);
  }
  private tmux(...a: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...a], { encoding: 'utf8' });
  }
  screen(): string {
    return this.tmux('capture-pane', '-p', '-t', 'cli');
  }
  /** Wait until the screen matches `re` (the process draws in its own time). */
  async waitFor(re: RegExp, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.screen();
      if (re.test(s)) return s;
      if (Date.now() > deadline) throw new Error(`the screen never showed ${re}:\n${s}`);
      await sleep(100);
    }
  }
  press(key: string): void {
    this.tmux('send-keys', '-t', 'cli', '-l', key);
  }
  close(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}

describe('meshsync cases', () => {
  let rt: ServiceUnderTest;
  const home = newHome();
  let dir = '';
  const env = async (role: 'Operator' | 'Viewer' = 'Operator') => ({ MESHSYNC_HOME: home, MESHSYNC_URL: rt.baseUrl, MESHSYNC_TOKEN: await rt.token(role) });
  const cli = async (args: string[], role: 'Operator' | 'Viewer' = 'Operator') => meshsync(args, await env(role));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const openCases = async (): Promise<any[]> => (await rt.call('GET', `correlation-cases?connectorId=${dir}&state=open`)).body.items;

  beforeAll(async () => {
    rt = await startService();
    const hrDir = folder('ims-cases-hr-');
    writeCsv(
      hrDir,
      'hr.csv',
      ['id', 'employeeId', 'displayName'],
      [
        { id: 'h1', employeeId: 'E1', displayName: 'Anna Schmidt' },
        { id: 'h2', employeeId: 'E2', displayName: 'Anna Schmidt' },
        { id: 'h3', employeeId: 'E3', displayName: 'Jonathan Smith' },
        { id: 'h4', employeeId: 'E4', displayName: 'Maria Keller' },
        { id: 'h5', employeeId: 'E5', displayName: 'Olumide Bakare' },
        { id: 'h6', employeeId: 'E6', displayName: 'Søren Ågård' },
      ],
    );
    const hr = await fileConnector(rt, 'HR', hrDir);
    await sourceRules(rt, hr, 'employeeId', ['employeeId', 'displayName']);
    const dirDir = folder('ims-cases-dir-');
    writeCsv(
      dirDir,
      'dir.csv',
      ['id', 'employeeNumber', 'displayName'],
      [
        { id: 'd1', employeeNumber: 'E4', displayName: 'Maria Keller' },
        { id: 'd2', employeeNumber: '', displayName: 'Anna Schmidt' },
        { id: 'd3', employeeNumber: '', displayName: 'Jonathon Smith' },
        { id: 'd4', employeeNumber: '', displayName: 'OLUMIDE  bakare' },
        { id: 'd5', employeeNumber: '', displayName: 'Soren Agard' },
        { id: 'd6', employeeNumber: '', displayName: 'Nobody Here' },
      ],
    );
    const res = await rt.call('POST', 'connectors', {
      body: {
        name: 'Directory',
        type: 'custom',
        config: {
          implementation: 'file',
          objectType: 'User',
          settings: { path: dirDir, anchorColumn: 'id' },
          correlation: { autoJoinConfidence: 80, caseOnMissingKey: true },
        },
      },
    });
    expect(res.status).toBe(201);
    dir = res.body.id;
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId', confidence: 100 });
    await rule(rt, { ruleType: 'JoinRule', connectorId: dir, sourceAttribute: 'displayName', targetAttribute: 'displayName', confidence: 60, match: 'fuzzy' });
    expect(await runImport(rt, hr)).toMatchObject({ status: 'Completed' });
    expect(await runImport(rt, dir)).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  });
  afterAll(async () => {
    await rt?.dispose();
  });

  test('ls and show name the connector and the case by name; decide joins the candidate given by number', async () => {
    const ls = await cli(['cases', 'ls', '--connector', 'directory']);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(/CASE ID\s+CONNECTOR\s+OBJECT\s+REASON/);
    // A table shows a run of blanks as one.
    for (const name of ['Anna Schmidt', 'Jonathon Smith', 'OLUMIDE bakare', 'Soren Agard', 'Nobody Here']) expect(ls.stdout).toContain(name);
    expect(ls.stdout).toContain('severalCandidates');
    expect(ls.stdout).not.toContain('Maria Keller');
    const json = JSON.parse((await cli(['cases', 'ls', '--connector', 'Directory', '--reason', 'noKey', '-o', 'json'])).stdout);
    expect(json.totalCount).toBe(4);
    // Accents that do not decompose (ø, å) are normalised too.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    expect(json.items.find((c: any) => c.object.displayName === 'Soren Agard').candidates[0]).toMatchObject({ score: 60, matched: [{ how: 'normalized' }] });

    const show = await cli(['cases', 'show', 'Anna Schmidt']);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('reason: severalCandidates');
    expect(show.stdout).toMatch(/1\. Anna Schmidt\s+\[E[12]\]\s+score 60/);
    expect(show.stdout).toMatch(/2\. Anna Schmidt\s+\[E[12]\]\s+score 60/);
    expect((await cli(['cases', 'show', 'Jonathon Smith'])).stdout).toMatch(/Jonathan Smith\s+\[E3\]\s+score \d+\s+r-\w+: fuzzy\(0\.9\d+\)/);

    // A Viewer reads but does not decide; a decision that is none is a usage error.
    expect((await cli(['cases', 'decide', 'Anna Schmidt', 'join'], 'Viewer')).code).not.toBe(0);
    expect((await cli(['cases', 'decide', 'Anna Schmidt', 'merge'])).code).toBe(3);
    // The twins tie: join needs the candidate; --to 2 names the second one.
    const tie = await cli(['cases', 'decide', 'Anna Schmidt', 'join']);
    expect(tie.code).not.toBe(0);
    expect(tie.stderr).toMatch(/Several candidates share the best score/);
    const detail = JSON.parse((await cli(['cases', 'show', 'Anna Schmidt', '-o', 'json'])).stdout);
    const decided = await cli(['cases', 'decide', 'Anna Schmidt', 'join', '--to', '2', '-o', 'json']);
    expect(decided.code).toBe(0);
    expect(JSON.parse(decided.stdout)).toMatchObject({ state: 'decided', decision: 'join', meshObjectId: detail.candidates[1].meshObjectId });
    const mesh = await rt.call('GET', `mesh/objects/${detail.candidates[1].meshObjectId}`);
    expect(JSON.stringify(mesh.body)).toContain(dir);
  });

  test('cases work: a queue worked with the keyboard on a real terminal; the decisions land', async () => {
    const before = await openCases();
    expect(before.map((c) => c.object.displayName).sort()).toEqual(['Jonathon Smith', 'Nobody Here', 'OLUMIDE  bakare', 'Soren Agard']);
    const term = new Terminal(['cases', 'work', '--connector', 'Directory'], await env());
    try {
      const names: string[] = [];
      // The queue shows one case per screen; a key decides it and the next one is drawn.
      for (let i = 1; i <= 4; i++) {
        const screen = await term.waitFor(new RegExp(`Open case ${i} of 4[\\s\\S]*\\[q\\] quit`));
        const name = /Object:\s+(.+?)\s+\[/.exec(screen)![1];
        names.push(name);
        if (name === 'Nobody Here') term.press('i');
        else if (name === 'Soren Agard') term.press('n');
        else if (name === 'Jonathon Smith') {
          // A key that does nothing is said so, and the case stays.
          term.press('x');
          await term.waitFor(/'x' does nothing here/);
          term.press('1');
        } else term.press('j');
      }
      const end = await term.waitFor(/EXIT=\d+/);
      expect(end).toContain('Done: 3 decided, 1 left for later.');
      expect(end).toContain('EXIT=0');
      expect(names.sort()).toEqual(['Jonathon Smith', 'Nobody Here', 'OLUMIDE  bakare', 'Soren Agard']);
    } finally {
      term.close();
    }
    const open = await openCases();
    expect(open.map((c) => c.object.displayName)).toEqual(['Soren Agard']);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const all: any[] = (await rt.call('GET', `correlation-cases?connectorId=${dir}`)).body.items;
    const by = (n: string) => all.find((c) => c.object.displayName === n);
    expect(by('Nobody Here')).toMatchObject({ state: 'decided', decision: 'ignore' });
    expect(by('Jonathon Smith')).toMatchObject({ state: 'decided', decision: 'join', meshObjectId: by('Jonathon Smith').candidates[0].meshObjectId });
    expect(by('OLUMIDE  bakare')).toMatchObject({ state: 'decided', decision: 'join' });
    expect(by('OLUMIDE  bakare').candidates[0].matched[0].how).toBe('normalized');

    // space disconnect / undo by connector name.
    const cs = by('Jonathon Smith').csObjectId;
    const off = await cli(['space', 'disconnect', 'Directory', cs, '-o', 'json']);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout)).toMatchObject({ decision: 'ignore', meshObjectId: null });
    const undo = await cli(['space', 'undo', 'Directory', cs, '-o', 'json']);
    expect(JSON.parse(undo.stdout)).toMatchObject({ decision: null, history: [{ action: 'join' }, { action: 'ignore' }, { action: 'undo' }] });
    // Undone, the rules decide again: the typo is a case again.
    expect((await openCases()).map((c) => c.object.displayName).sort()).toEqual(['Jonathon Smith', 'Soren Agard']);
  });
});
