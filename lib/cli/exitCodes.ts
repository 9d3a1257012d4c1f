/**
 * The CLI's exit codes. They are part of its interface (scripts branch on them) and documented in docs/cli.md:
 * never renumber one.
 */
export const EXIT = {
  /** Done; a run waited for ended Completed. */
  ok: 0,
  /** A run waited for ended CompletedWithErrors. */
  completedWithErrors: 1,
  /** A run waited for ended Failed, Rejected or Cancelled. */
  runFailed: 2,
  /** Bad arguments, or the service refused the request's content (400). */
  usage: 3,
  /** Not signed in, the token was refused (401) or the role lacks the permission (403). */
  auth: 4,
  /** The resource does not exist (404). */
  notFound: 5,
  /** The service refused the request in the resource's current state (409), e.g. a run already going. */
  conflict: 6,
  /** The service could not be reached, or answered 429 or 5xx. */
  unavailable: 7,
  /** A run waited for stopped to wait for approval (AwaitingApproval): it goes on after `runs approve`. */
  awaitingApproval: 8,
  /** A check answered that it failed: `connectors test` with `ok: false`. */
  checkFailed: 9,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports in one or a few lines (never a stack) and exits with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** Further lines: the problem's field errors. */
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

/** The exit code of an HTTP status the service answered. */
export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 400 || status === 413 || status === 415) return EXIT.usage;
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 409 || status === 412) return EXIT.conflict;
  return EXIT.unavailable;
}

/** The exit code of a run's final status. */
export function exitCodeOfRun(status: string): ExitCode {
  if (status === 'Completed') return EXIT.ok;
  if (status === 'CompletedWithErrors') return EXIT.completedWithErrors;
  if (status === 'AwaitingApproval') return EXIT.awaitingApproval;
  return EXIT.runFailed;
}
