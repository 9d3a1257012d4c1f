import { rootWarning } from '../../../lib/runtime/cli';

describe('rootWarning', () => {
  it('warns for uid 0 only, with the advice to run as an unprivileged user', () => {
    expect(rootWarning(0)).toMatch(/^Running as root: .* Run it as an unprivileged user/);
    expect(rootWarning(1000)).toBeUndefined();
    // Windows has no uid.
    expect(rootWarning(undefined)).toBeUndefined();
  });
});
