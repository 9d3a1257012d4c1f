import { createHash } from 'node:crypto';

/**
 * The connector SDK: what every connector (directory, SQL, custom) implements and what the sync engine
 * relies on. Shaped after ConnId's SPI: a small base (test connection, schema, close) plus capabilities as
 * separate interfaces (full import, delta import, export), so a read-only source simply does not implement
 * `Export` and the engine asks with `hasExport()` instead of catching "not supported".
 *
 * A connector module exports a {@link ConnectorDefinition} (`{ type, configSchema, create(config) }`); the
 * registry maps the connector `type` to it. A custom connector (type `custom`) is selected by
 * `config.implementation` through `lib/connectors/custom.ts`.
 */

import type { AttributeValue, ScalarValue } from '../core/values';

// The value types live at the bottom of the house (lib/core/values.ts); connectors know them from here too.
export { isAttributeValue, valuesOf, type AttributeValue, type ScalarValue } from '../core/values';

/**
 * An object as a connector reads it from its source.
 *
 * - `anchor` is the connector's own immutable key (entryUUID, objectGUID, the anchor column): never a DN,
 *   which changes on rename.
 * - `attributes` holds every attribute read, reference attributes included (so a flow rule can copy the raw
 *   value). An absent attribute and a `null` one mean the same thing; a multi-valued attribute is an array.
 * - `references` marks the reference attributes: the attribute name to the referenced objects' identifiers
 *   (anchors, DNs or another attribute's values, as the schema's {@link ReferenceTarget} says), always as an
 *   array of strings, without empty values.
 */
export interface ConnectorObject {
  anchor: string;
  objectType: string;
  /** The object's distinguished name, for sources that have one. */
  dn?: string;
  /** The object's container (an OU, a folder, a department column): a change of it is a rename. */
  container?: string;
  attributes: Record<string, AttributeValue>;
  references?: Record<string, string[]>;
}

/**
 * A problem with one object (unreadable row, rejected export): it is reported and the run goes on.
 * An error that carries an `anchor` means the object exists but could not be read: the engine must not treat
 * that object as deleted.
 */
export interface ObjectError {
  anchor?: string;
  objectType?: string;
  code: ConnectorErrorCode;
  /** Safe to show: never contains a secret. */
  message: string;
  /** Where in the source the object is (`users.csv:42`, a DN), to help an operator find it. */
  location?: string;
  retriable?: boolean;
}

export const CONNECTOR_ERROR_CODES = [
  'connection_failed',
  'authentication_failed',
  'timeout',
  'configuration_invalid',
  'object_error',
  'not_found',
  'already_exists',
  'constraint_violation',
  'cursor_invalid',
  'unsupported',
  'aborted',
  'internal',
] as const;

/**
 * Why a connector operation failed. Run-level codes (the run ends `Failed`): connection_failed,
 * authentication_failed, timeout, configuration_invalid, cursor_invalid (a persisted cursor no longer fits the
 * source: restart the full import), unsupported, aborted, internal. Object-level codes (a per-object error, the
 * run goes on): object_error, not_found, already_exists, constraint_violation.
 */
export type ConnectorErrorCode = (typeof CONNECTOR_ERROR_CODES)[number];

const RETRIABLE_BY_DEFAULT: ReadonlySet<ConnectorErrorCode> = new Set(['connection_failed', 'timeout']);

/**
 * The one error type connectors throw. Its message is shown to operators (run `error`, per-object errors),
 * so a connector builds it from safe parts only; {@link redactSecrets} helps when a driver message may echo
 * a secret. `retriable` tells the engine whether the same call may succeed later (network blip) or never will
 * (wrong password, bad configuration).
 */
export class ConnectorError extends Error {
  readonly retriable: boolean;
  /** The object concerned, for per-object errors. */
  readonly anchor?: string;
  readonly location?: string;
  /**
   * On an `already_exists` refusal of an add: the object that holds the DN or key the add used (see
   * {@link ExistingObject}); a connector copies it to the error result.
   */
  existing?: ExistingObject;
  /**
   * A run-level failure in the middle of an export batch: the results of the changes applied before it, in
   * order (the engine records them before the run fails, so nothing applied is forgotten and nothing is
   * reported as done that was not).
   */
  applied?: ExportResult[];
  constructor(
    readonly code: ConnectorErrorCode,
    message: string,
    options: { retriable?: boolean; cause?: unknown; anchor?: string; location?: string; applied?: ExportResult[]; existing?: ExistingObject } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.retriable = options.retriable ?? RETRIABLE_BY_DEFAULT.has(code);
    this.anchor = options.anchor;
    this.location = options.location;
    if (options.applied) this.applied = options.applied;
    if (options.existing) this.existing = options.existing;
  }

  /** The per-object form of this error. */
  toObjectError(objectType?: string): ObjectError {
    const e: ObjectError = { code: this.code, message: this.message, retriable: this.retriable };
    if (this.anchor !== undefined) e.anchor = this.anchor;
    if (objectType !== undefined) e.objectType = objectType;
    if (this.location !== undefined) e.location = this.location;
    return e;
  }
}

export function isConnectorError(err: unknown): err is ConnectorError {
  return err instanceof ConnectorError;
}

/**
 * Replace every occurrence of each secret in a message by `********`. For wrapping driver errors whose text
 * may echo a password or a connection string.
 */
export function redactSecrets(message: string, secrets: ReadonlyArray<string | undefined | null>): string {
  let out = message;
  for (const s of secrets) {
    if (s && s.length >= 1) out = out.split(s).join('********');
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Schema

/** How the values of a reference attribute identify the referenced object. */
export type ReferenceTarget = {
  /** The object type the reference points to (`User`, `Group`). */
  objectType: string;
  /** `anchor`: values are the target's anchors; `dn`: its DN; `attribute`: the value of `attribute` on it. */
  resolveBy: 'anchor' | 'dn' | 'attribute';
  attribute?: string;
};

export interface AttributeSchema {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'datetime' | 'binary';
  multiValued: boolean;
  required?: boolean;
  /** Present on reference attributes. */
  reference?: ReferenceTarget;
}

export interface ObjectTypeSchema {
  name: string;
  /** The attribute the anchor comes from, when it is an ordinary attribute (an SQL column, a CSV column). */
  anchorAttribute?: string;
  attributes: AttributeSchema[];
}

/** What a connector can read and write: its object types and their attributes. */
export interface ConnectorSchema {
  objectTypes: ObjectTypeSchema[];
}

// ---------------------------------------------------------------------------------------------------------
// Capabilities

export interface ConnectionTestResult {
  /** A short human description of what was reached (`3 files in /data/hr`), safe to show. */
  message: string;
  /**
   * Settings the connector decided from the server where the configuration left them out (a directory's
   * default `anchorAttribute`): the Admin API stores them with the connector, so they stay the same for its
   * lifetime. Never secrets.
   */
  settings?: Record<string, unknown>;
}

/** Every connector has these. */
export interface ConnectorBase {
  readonly type: string;
  /** Reach the source and check the credentials; throws a {@link ConnectorError} saying what failed. */
  testConnection(): Promise<ConnectionTestResult>;
  /** The object types and attributes this connector exposes (may read them from the source). */
  schema(): Promise<ConnectorSchema>;
  /** Release connections and handles. Idempotent. */
  close(): Promise<void>;
}

export interface FullImportOptions {
  /** Objects per page (the engine runs one activity per page). A connector may return fewer, never more. */
  pageSize: number;
  signal?: AbortSignal;
  /**
   * Resume after the page whose `cursor` this is (the engine persisted it and crashed). Absent or null:
   * start from the beginning. A cursor that no longer fits the source (it changed under the import) makes
   * the iterator throw `cursor_invalid`: the engine then restarts the full import from the beginning.
   */
  cursor?: string | null;
}

/**
 * One page of a full import. Pages are small and independent, so memory stays bounded however big the source.
 */
export interface ImportPage {
  objects: ConnectorObject[];
  /** Objects that could not be read (see {@link ObjectError} about anchors and deletion). */
  errors: ObjectError[];
  /**
   * An opaque token to resume after this page (pass it as `FullImportOptions.cursor`); null on the last page.
   * The engine persists it only after committing the page.
   */
  cursor: string | null;
  /**
   * On the last page only: the delta watermark that covers everything this full import read (captured before
   * the first page where the source works that way), so the next delta import starts from it.
   */
  watermark?: string | null;
}

export interface FullImport {
  /**
   * Read every object, page by page. The iterator yields at least one page (possibly empty) and the last page
   * has `cursor: null`. Run-level failures throw a {@link ConnectorError}; unreadable objects go to `errors`.
   */
  fullImport(options: FullImportOptions): AsyncIterable<ImportPage>;
}

export interface DeltaImportOptions {
  pageSize: number;
  signal?: AbortSignal;
}

/**
 * One change seen by a delta import. `add`, `update` and `rename` carry the whole current `object` (the engine
 * compares it with its staging copy, so a connector need not know which attributes changed); `rename` also
 * carries where the object was before. `delete` carries the anchor (and the last DN/container known).
 */
export interface DeltaChange {
  kind: 'add' | 'update' | 'delete' | 'rename';
  /**
   * The object's anchor. A delete whose source names only the DN (389 Directory Server's retro changelog
   * without `targetUniqueId`) has `anchor` '' and `dn`: the DN the object had at the watermark the delta
   * started from (before any rename the same delta reports); the engine finds the object by that DN in its
   * connector space.
   */
  anchor: string;
  /** With an empty `anchor` on a delete: the deleted object's DN (see `anchor`). */
  dn?: string;
  objectType: string;
  object?: ConnectorObject;
  previousDn?: string;
  previousContainer?: string;
  /**
   * On a delete: the source itself removed the deleted object from the reference values naming it (Active
   * Directory's linked attributes) without reporting those objects as changed, so their connector-space values
   * still name `previousDn`; the engine should drop that value from them.
   */
  referencesDropped?: boolean;
}

export interface DeltaPage {
  changes: DeltaChange[];
  errors: ObjectError[];
  /**
   * On the last page only: the watermark to pass to the next delta import. The engine stores it only after the
   * changes of every page are committed; an interrupted delta is simply run again from the old watermark, so a
   * connector must keep whatever the old watermark needs until it is called with a newer one.
   */
  nextWatermark?: string;
  /**
   * Set (on the first and only page) when the delta cannot be computed from this watermark: the change log no
   * longer reaches it, the state it names is gone, or there is no watermark yet. The engine then runs a full
   * import and says so in the run.
   */
  fullImportRequired?: { reason: string };
}

export interface DeltaImport {
  /** Changes since `watermark` (null: no baseline yet, which answers `fullImportRequired`). */
  deltaImport(watermark: string | null, options: DeltaImportOptions): AsyncIterable<DeltaPage>;
}

/**
 * One change to apply to the target.
 * - `add`: `attributes` holds every value to write; `anchor` may be absent (the target assigns it, then the
 *   result returns it) or given (the connector's anchor attribute value).
 * - `update`: `attributes` holds only the replaced attributes (`null` clears one); `multiValueAdds` and
 *   `multiValueRemoves` change single values of multi-valued attributes without replacing the rest.
 *   `previous` holds the values the engine last exported or imported, for connectors that need them.
 *   An update may name an object the target refused to add because it already held it (the engine taking
 *   over the {@link ExistingObject} of an `already_exists` result): `anchor` is then that object's anchor.
 * - `add` and `update` may carry `state`: the target's intended full state (see `state`).
 * - `delete`: only `anchor` matters. Deleting an object that is already gone succeeds (a replayed run must
 *   not fail on it).
 * - `rename`: `dn`/`container` hold the new place; `attributes` may carry updates too.
 */
export interface ExportChange {
  kind: 'add' | 'update' | 'delete' | 'rename';
  anchor?: string;
  objectType: string;
  dn?: string;
  container?: string;
  attributes: Record<string, AttributeValue>;
  previous?: Record<string, AttributeValue>;
  /**
   * On `add` and `update`: every value the outbound rules give the object now (the target's intended full
   * state, the engine fills it), not only what changed. A connector that must write whole rows (an SQL
   * `UPDATE` that sets every column) takes a value from `attributes` (the change) first, then from `state`,
   * then from `previous`, so an update that changes one attribute keeps the others. Absent: the engine did not
   * give it (older engines); connectors fall back to `previous`.
   */
  state?: Record<string, AttributeValue>;
  multiValueAdds?: Record<string, ScalarValue[]>;
  multiValueRemoves?: Record<string, ScalarValue[]>;
}

/**
 * The object that holds the DN (a directory) or the key (an SQL row) an add used, read by the connector when
 * the target refused the add because it exists (`already_exists`): a re-sent add (the engine crashed between
 * the target's answer and its own record, or the link dropped before the answer) finds its own earlier add
 * there. The connector only reports it; the engine decides whether to take it over (it knows whether the
 * anchor already belongs to another mesh object) by sending an ordinary `update` with this `anchor`.
 */
export interface ExistingObject {
  /** The object's anchor, by the connector's anchor setting (entryUUID, objectGUID, the anchor column). */
  anchor: string;
  /** Its DN, for sources that have one. */
  dn?: string;
  /**
   * Its current values: a directory reads the attributes the add named; an SQL row is read whole, as the full
   * import reads it. Same shapes as {@link ConnectorObject.attributes}.
   */
  attributes: Record<string, AttributeValue>;
}

/**
 * The outcome for one object. `anchor` is set on success (for an add, the anchor the target assigned).
 * `notes` (success): what the connector did besides the change (a directory's containers it created), listed
 * in the run, not errors. `existing` (error): on an add refused with `already_exists`, the object that holds
 * the DN or key, when the connector could read it (see {@link ExistingObject}); the error's code and message
 * stay those of the refusal.
 */
export type ExportResult =
  { status: 'success'; anchor: string; dn?: string; notes?: string[] } | { status: 'error'; anchor?: string; error: ObjectError; existing?: ExistingObject };

/**
 * How an export call is run. `signal`: the engine aborts it when the run is cancelled while the call is in
 * flight; a connector that honours it stops the statement or request in flight and throws `aborted`, with
 * `applied` set to the results of the changes it committed before (a transaction in flight is rolled back, not
 * committed). A connector may ignore it: the cancel then waits for the call to return.
 */
export interface ExportOptions {
  signal?: AbortSignal;
}

export interface Export {
  /**
   * Apply one change. Per-object failures resolve to an error result; run-level failures throw. An add the
   * target refuses because the DN or key is taken resolves to `already_exists` with `existing` (the object
   * there) when the connector can read it.
   */
  export(change: ExportChange, options?: ExportOptions): Promise<ExportResult>;
  /**
   * Apply several changes at once (a transaction, one file rewrite), returning one result per change, in
   * order. Optional: without it the engine calls `export` per change.
   */
  exportBatch?(changes: ExportChange[], options?: ExportOptions): Promise<ExportResult[]>;
  /**
   * The DN an add would get, computed without touching the target (the one-object preview shows it).
   * Optional: directories implement it; undefined when the add would fail or names no DN.
   */
  plannedDn?(change: ExportChange): string | undefined;
}

/**
 * A source's own push stream of change notifications (a directory's persistent search, syncrepl or change
 * notification): it only says that something changed, never what. The engine then reads the delta import from its
 * stored watermark, so nothing depends on the stream being complete; it only cuts the time before the next look.
 */
export interface ChangeStream {
  /** What the source offered, for logs and the admin ("syncrepl", "persistent search", "change notification"). */
  readonly kind: string;
  /**
   * Settles (never rejects) when the stream stops on its own: the server closed it, the connection dropped, the
   * server refused the request. It carries the reason. Not settled by {@link ChangeStream.close}.
   */
  readonly ended: Promise<Error>;
  /** Stop the stream and release its connection. Idempotent. */
  close(): void;
}

export interface ChangeNotifications {
  /**
   * Open the source's change stream, resolved once the server accepted it; null when the source offers none.
   * `onChange` is called for each notification (possibly several for one change). Throws a
   * {@link ConnectorError} when the source cannot be reached or refuses the credentials.
   */
  openChangeStream(onChange: () => void): Promise<ChangeStream | null>;
}

/** A connector: the base plus whichever capabilities it implements. */
export type Connector = ConnectorBase & Partial<FullImport> & Partial<DeltaImport> & Partial<Export> & Partial<ChangeNotifications>;

export const hasFullImport = (c: Connector): c is Connector & FullImport => typeof c.fullImport === 'function';
export const hasDeltaImport = (c: Connector): c is Connector & DeltaImport => typeof c.deltaImport === 'function';
export const hasExport = (c: Connector): c is Connector & Export => typeof c.export === 'function';
export const hasChangeStream = (c: Connector): c is Connector & ChangeNotifications => typeof c.openChangeStream === 'function';

/**
 * Apply a batch through `exportBatch` when the connector has it, else one change at a time. A run-level
 * failure part way through the one-at-a-time path throws with `applied` set to the results before it.
 */
export async function exportChanges(c: Connector & Export, changes: ExportChange[], options: ExportOptions = {}): Promise<ExportResult[]> {
  if (c.exportBatch) return c.exportBatch(changes, options);
  const out: ExportResult[] = [];
  for (const ch of changes) {
    try {
      throwIfAborted(options.signal);
      out.push(await c.export(ch, options));
    } catch (err) {
      throw withApplied(err, out);
    }
  }
  return out;
}

/**
 * A run-level failure that carries the results applied before it: `err` itself when it is a ConnectorError
 * (other errors are unexpected ones, left as they are; the run fails on them all the same).
 */
export function withApplied(err: unknown, applied: ExportResult[]): unknown {
  if (err instanceof ConnectorError && applied.length) err.applied = [...applied, ...(err.applied ?? [])];
  return err;
}

/** The results a failed export batch applied before it failed (none when it says nothing). */
export function appliedBefore(err: unknown): ExportResult[] {
  return err instanceof ConnectorError && err.applied ? err.applied : [];
}

/** What the engine hands a connector besides its configuration. */
export interface ConnectorContext {
  /** The connector's id, for naming state. */
  connectorId?: string;
  /** A directory the connector may keep private state in (row hashes, caches) across runs and restarts. */
  stateDirectory?: string;
  /**
   * The attributes the connector's rules use (an import's connector; the engine computes them, see
   * lib/sync/import/readAttributes.ts): a connector that can read fewer than all may read only these, plus what it
   * needs itself. Absent: read as configured.
   */
  importAttributes?: readonly string[];
}

/**
 * What a connector module exports. `configSchema` is a JSON schema (TypeBox) the Admin API validates
 * `config` with on create/update; `create` trusts a validated config but still fails with
 * `configuration_invalid` on values a schema cannot express. Creating a connector does no I/O.
 */
export interface ConnectorDefinition<C = Record<string, unknown>> {
  type: string;
  configSchema: object;
  create(config: C, context?: ConnectorContext): Connector;
}

// ---------------------------------------------------------------------------------------------------------
// Helpers

/**
 * Canonical form used for hashing: object keys sorted, `null`/absent/empty-array attributes dropped, values
 * of multi-valued attributes sorted (a directory returns them in no particular order), so two reads of the same
 * data give the same text.
 */
export function canonicalObject(o: Pick<ConnectorObject, 'objectType' | 'dn' | 'container' | 'attributes' | 'references'>): unknown {
  const attrs: Record<string, AttributeValue> = {};
  for (const name of Object.keys(o.attributes).sort()) {
    const v = o.attributes[name];
    if (v === null || v === undefined) continue;
    if (Array.isArray(v)) {
      const vals = v.filter((x) => x !== null);
      if (vals.length === 0) continue;
      attrs[name] = sortScalars(vals);
    } else {
      attrs[name] = v;
    }
  }
  const refs: Record<string, string[]> = {};
  for (const name of Object.keys(o.references ?? {}).sort()) {
    const v = o.references![name];
    if (v.length) refs[name] = [...v].sort();
  }
  return [o.objectType, o.dn ?? null, o.container ?? null, attrs, refs];
}

function sortScalars(values: ScalarValue[]): ScalarValue[] {
  // Typed sort key so 1 and "1" stay distinct and the order is total.
  return values
    .map((v) => [typeof v + ':' + String(v), v] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map((p) => p[1]);
}

/** Stable JSON: object keys sorted at every level. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  const keys = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson((value as Record<string, unknown>)[k])).join(',') + '}';
}

/**
 * The content hash of an object (sha256 of its canonical JSON, base64url): equal hashes mean the object is
 * unchanged, so the engine writes nothing for it. The anchor is not part of it (it is the key). The text hashed
 * is exactly `canonicalJson(canonicalObject(o))`, built here without the generic walk because the engine
 * hashes every object of every import.
 */
export function contentHash(o: Pick<ConnectorObject, 'objectType' | 'dn' | 'container' | 'attributes' | 'references'>): string {
  let text =
    '[' +
    JSON.stringify(o.objectType) +
    ',' +
    (o.dn === undefined ? 'null' : JSON.stringify(o.dn)) +
    ',' +
    (o.container === undefined ? 'null' : JSON.stringify(o.container)) +
    ',{';
  let first = true;
  // The text of each array of strings without nulls: a reference attribute's values are usually the same
  // array as its references (a directory's member values), whose text is the same (strings sort the same way
  // with or without sortScalars' type prefix), so it is sorted and written once.
  let stringArrays: Map<readonly unknown[], string> | undefined;
  for (const name of sortedNames(Object.keys(o.attributes))) {
    const v = o.attributes[name];
    if (v === null || v === undefined) continue;
    let part: string;
    if (Array.isArray(v)) {
      let strings = true;
      let nulls = false;
      for (const x of v) {
        if (x === null) nulls = true;
        else if (typeof x !== 'string') strings = false;
      }
      const vals = nulls ? v.filter((x) => x !== null) : v;
      if (vals.length === 0) continue;
      if (strings) {
        part = '[' + (vals.length > 1 ? [...vals].sort() : vals).map((x) => JSON.stringify(x)).join(',') + ']';
        if (!nulls) (stringArrays ??= new Map()).set(v, part);
      } else {
        part = '[' + (vals.length > 1 ? sortScalars(vals) : vals).map((x) => JSON.stringify(x)).join(',') + ']';
      }
    } else {
      part = JSON.stringify(v);
    }
    text += (first ? '' : ',') + nameJson(name) + ':' + part;
    first = false;
  }
  text += '},{';
  first = true;
  const refs = o.references ?? {};
  for (const name of Object.keys(refs).sort()) {
    const r = refs[name];
    if (!r.length) continue;
    text +=
      (first ? '' : ',') +
      JSON.stringify(name) +
      ':' +
      (stringArrays?.get(r) ??
        '[' +
          [...r]
            .sort()
            .map((x) => JSON.stringify(x))
            .join(',') +
          ']');
    first = false;
  }
  return createHash('sha256')
    .update(text + '}]')
    .digest('base64url');
}

/**
 * The names in sorted order. The objects of a source mostly list the same names in the same order: the last
 * order sorted is kept, and names in that same order (compared one by one) reuse it instead of sorting again.
 */
let lastNames: string[] = [];
let lastSorted: string[] = [];
function sortedNames(names: string[]): string[] {
  if (names.length === lastNames.length) {
    let same = true;
    for (let i = 0; i < names.length; i++) {
      if (names[i] !== lastNames[i]) {
        same = false;
        break;
      }
    }
    if (same) return lastSorted;
  }
  lastNames = names;
  lastSorted = names.slice().sort();
  return lastSorted;
}

/** Attribute names as JSON strings, remembered (bounded: names are a schema's, values are not kept). */
const nameJsons = new Map<string, string>();
function nameJson(name: string): string {
  let json = nameJsons.get(name);
  if (json === undefined) {
    if (nameJsons.size >= 4096) nameJsons.clear();
    nameJsons.set(name, (json = JSON.stringify(name)));
  }
  return json;
}

/** Throws `aborted` when the signal fired; call between pages. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ConnectorError('aborted', 'The operation was cancelled.');
}
