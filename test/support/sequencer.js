// @ts-check
const { readFileSync } = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/**
 * Longest suites first, by the durations recorded in test/support/durations.json (seconds per suite, relative
 * path; `node scripts/testDurations.js <jest --json output>` writes it). With two workers the run ends when the
 * last suite does: a ten-minute suite started last would keep one worker busy long after the other is idle.
 * Jest's own sequencer orders by durations it cached on this machine, so a clean checkout (CI) had only file
 * sizes to go by. A suite missing from the list (a new one) counts as long and starts early; suites that failed
 * on this machine's last run still go first, as with jest's own sequencer.
 */
const UNKNOWN_SECONDS = 60;

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

  /** @param {import('@jest/test-result').Test[]} tests */
  sort(tests) {
    const seconds = (/** @type {import('@jest/test-result').Test} */ t) => {
      const rel = path.relative(t.context.config.rootDir, t.path).split(path.sep).join('/');
      return this.recorded[rel] ?? UNKNOWN_SECONDS;
    };
    const bySize = super.sort([...tests]);
    const sizeRank = new Map(bySize.map((t, i) => [t.path, i]));
    return [...tests].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      return seconds(b) - seconds(a) || (sizeRank.get(a.path) ?? 0) - (sizeRank.get(b.path) ?? 0);
    });
  }
}

module.exports = DurationSequencer;
