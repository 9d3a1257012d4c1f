import type { AttributeValue, ExportChange } from '../connectors/sdk';

/**
 * The last failure of an export change of one object (lib/sync/export/exportRetry.ts): the target's message, the run
 * and time of the failure, and how many export runs in a row tried the change and failed (`attempts`). At
 * `Export__MaxAttempts` the export runs skip the object until it is retried (`POST .../space/{csObjectId}/retry`).
 */
export interface ExportError {
  message: string;
  runId: string;
  occurredOn: string;
  attempts: number;
}

/** A change staged for the target and not applied yet (it failed): its kind, values and when it was first staged. */
export interface PendingExport {
  kind: ExportChange['kind'];
  attributes: Record<string, AttributeValue>;
  stagedOn?: string;
}

/**
 * The connector space's data model (the mesh's is lib/mesh/model.ts).
 *
 * A connector-space object: the engine's staging copy of what a connector last showed (or what was exported
 * to it and awaits confirmation).
 */
export interface CsObject {
  anchor: string;
  objectType: string;
  dn?: string;
  attributes: Record<string, AttributeValue>;
  /** contentHash of the object as imported (empty for an object known only from an export). */
  hash: string;
  /** The hash of the rules it was processed with: a rule change makes an unchanged object be processed again. */
  rulesHash: string;
  meshId: string | null;
  /** Set when the object disappeared from the source (a full import did not see it, or a delta deleted it). */
  deleted?: boolean;
  /** Values written by the last export, awaiting the confirming import (connector-side names). */
  exported?: Record<string, AttributeValue>;
  /** Staged export not yet applied (add/update/delete with the values): a change the target refused. */
  pendingExport?: PendingExport | null;
  /** Why the pending export failed, and how many times (see {@link ExportError}). */
  exportError?: ExportError;
  /**
   * The object's id when it is not the name-based one of its anchor: an object added by an export after its add
   * had failed keeps the id of its staged add (lib/sync/space/csIds.ts).
   */
  csObjectId?: string;
  /** When an import last wrote the object as its source showed it (an unchanged object is not written again). */
  importedOn?: string;
  /** When an export last applied a change to the object. */
  exportedOn?: string;
  /** Exported values that did not come back in the confirming import. */
  unconfirmed?: string[];
  /** A per-object error from the last run (join ambiguity, transform failure). */
  error?: string;
  /** The names of the reference attributes (their values are in `attributes`), as the connector marked them. */
  refNames?: string[];
  /**
   * A disconnector's join keys (`<mesh attribute>\u0000<key>`, as the join rules computed them): kept light
   * so that a run can find, without reading every row, the disconnectors a mesh object that appeared since
   * could join.
   */
  joinKeys?: string[];
  /**
   * Added to the target by an export of this connector: the link is a provisioned one (it does not keep the mesh
   * object alive). Kept so that a target object deprovisioned and then linked again (a rehire, a return inside
   * the grace) is a provisioned link again.
   */
  provisioned?: boolean;
  /**
   * Deprovisioning of a target object (the connector's `config.deprovisioning`, lib/sync/deprovisioning.ts):
   * `pending` (grace: due at `due`), `disabled` (the disable values were written: `written`, and the values the
   * target showed for them before, `previous`) or `none` (left as it was, unlinked). `reason`: its mesh object
   * went away (`gone`), its provisioning condition stopped holding (`condition`), or an orphan sweep disabled it
   * (`orphan`: joined to no active identity, lib/sync/orphans/).
   */
  deprovisioned?: {
    state: 'pending' | 'disabled' | 'none';
    reason: 'gone' | 'condition' | 'orphan';
    at: string;
    due?: string;
    written?: string[];
    previous?: Record<string, AttributeValue>;
  };
  updatedOn: string;
}
