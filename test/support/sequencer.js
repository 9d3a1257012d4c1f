// @ts-check
const { readFileSync } = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/**
 * Longest suites first, by the durations recorded in test/support/durations.json (seconds per suite, relative
 * path; `node scripts/testDurations.js <jest --json output>` writes it). With a few workers the run ends when the
 * last suite does: a ten-minute suite started last would keep one worker busy long after the other is idle.
 * Jest's own sequencer orders by durations it cached on this machine, so a clean checkout (CI) had only file
 * sizes to go by. A suite missing from the list (a new one) counts as long and starts early; suites that failed
 * on this machine's last run still go first, as with jest's own sequencer.
 *
 * Suites that start the Samba AD DC (they import test/support/samba.ts) wait for each other: one DC runs on the
 * machine at a time, behind a machine-wide lock. Two of them side by side leave a worker idle while the second
 * waits, so the order is then adjusted by playing the run through with the recorded durations: a worker that
 * frees up while a Samba suite runs on another one takes the longest suite that needs no DC.
 */
const UNKNOWN_SECONDS = 60;
const NEEDS_SAMBA = /from '(\.\.\/)+support\/samba'/;

class DurationSequencer extends Sequencer {
  constructor(...args) {
    super(...args);
    /** @type {Record<string, number>} */
    this.recorded = {};
    try {
      this.recorded = JSON.parse(readFileSync(path.join(__dirname, 'durations.json'), 'utf8'));
    } catch {
      // No list: every suite counts the same, jest's file-size order decides.
    }
  }

  /** @param {import('@jest/test-result').Test} t */
  seconds(t) {
    const rel = path.relative(t.context.config.rootDir, t.path).split(path.sep).join('/');
    return this.recorded[rel] ?? UNKNOWN_SECONDS;
  }

  /** @param {import('@jest/test-result').Test[]} tests */
  sort(tests) {
    const bySize = super.sort([...tests]);
    const sizeRank = new Map(bySize.map((t, i) => [t.path, i]));
    const longestFirst = [...tests].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      return this.seconds(b) - this.seconds(a) || (sizeRank.get(a.path) ?? 0) - (sizeRank.get(b.path) ?? 0);
    });
    return this.apartOnSamba(longestFirst, workers());
  }

  /**
   * Play the run through (each free worker takes the next suite, as jest does) and, while a Samba suite runs on
   * one worker, give a worker that frees up the first suite in `ordered` that needs no DC instead of one that would wait.
   * @param {import('@jest/test-result').Test[]} ordered
   * @param {number} count workers
   */
  apartOnSamba(ordered, count) {
    const samba = new Set(ordered.filter((t) => needsSamba(t.path)).map((t) => t.path));
    if (count < 2 || samba.size === 0) return ordered;
    const freeAt = new Array(count).fill(0);
    let sambaUntil = 0;
    const rest = [...ordered];
    const out = [];
    while (rest.length) {
      const w = freeAt.indexOf(Math.min(...freeAt));
      const now = freeAt[w];
      let i = 0;
      if (now < sambaUntil && samba.has(rest[0].path))
        i = Math.max(
          0,
          rest.findIndex((t) => !samba.has(t.path)),
        );
      const [t] = rest.splice(i, 1);
      let start = now;
      if (samba.has(t.path)) {
        start = Math.max(now, sambaUntil);
        sambaUntil = start + this.seconds(t);
      }
      freeAt[w] = start + this.seconds(t);
      out.push(t);
    }
    return out;
  }
}

/** @type {Map<string, boolean>} */
const sambaFiles = new Map();
/** @param {string} file */
function needsSamba(file) {
  let hit = sambaFiles.get(file);
  if (hit === undefined) {
    try {
      hit = NEEDS_SAMBA.test(readFileSync(file, 'utf8'));
    } catch {
      hit = false;
    }
    sambaFiles.set(file, hit);
  }
  return hit;
}

/** The worker count of this run: `--maxWorkers`/`-w` when given as a number, else jest.config.js's. */
function workers() {
  const argv = process.argv;
  for (let i = 0; i < argv.length; i++) {
    const m = /^(?:--maxWorkers|-w)(?:=(\d+))?$/.exec(argv[i]);
    if (m) return Number(m[1] ?? argv[i + 1]) || 1;
    if (argv[i] === '--runInBand' || argv[i] === '-i') return 1;
  }
  return Number(require('../../jest.config.js').maxWorkers) || 1;
}

module.exports = DurationSequencer;
