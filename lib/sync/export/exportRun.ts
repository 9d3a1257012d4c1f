import { SettingsReader } from '../../core/config';
import { decodeMeshObject } from '../../mesh/codec';
import type { MeshObject } from '../../mesh/model';
import { MESH_PARTITIONS, applyLinkState, getMeshObjects, iterateMeshRows, type LinkState } from '../../mesh/store';
import { loadDocs } from '../run/runContext';
import { DEFAULT_PAGE_SIZE, type RunInfo } from '../run/runTypes';
import { saveExportPage } from '../run/state';
import { mapLimit } from '../../storage/tableUtil';

/**
 * A full export in pages of mesh ids over the whole mesh, in reference order, instead of one step per mesh
 * partition (docs/sync-engine.md, "A full export in reference order").
 *
 * The scope step ({@link orderFullExport}) reads every mesh object of the connector's type once, gives each a
 * level (0: it names no object this export is about to add; else one more than the highest level of the objects
 * to add it names) and writes the ids in pages (at most DEFAULT_PAGE_SIZE, never two levels in one page). The
 * pages then run one after the other as the incremental export's pages do (exportIdsPage; small consecutive
 * pages in one step, {@link stepsOf}): a manager is added
 * by an earlier page than the people who report to them, so their references are written by their own add and
 * the second pass has (nearly) nothing left to do; and a page spans every partition, so its writes go out in
 * transactions of many rows instead of a few.
 *
 * The objects read by the scope step are kept in this process for the run's pages ({@link runDocs}): a page
 * takes its objects from there instead of reading them again, the references are resolved from there (kept
 * up to date with the links the run writes), and the link writes start from the ETags read (a write
 * conditional on them: one made by anyone else since is read again). A cache only: a page run in another
 * process, after a restart, or a second time (a retried activity) reads the mesh, as a page always did.
 */

/** How many mesh partitions the scope step reads at the same time. */
const READ_PARTITIONS_AT_ONCE = 4;

/** Above this many objects of the type a full export keeps its 16 partition steps (nothing held in memory). */
export const ORDERED_EXPORT_MAX = 20_000;

/**
 * `Export:OrderedMax` (default {@link ORDERED_EXPORT_MAX}, 0 to 100,000): the most objects of the type a full
 * export takes in reference order; 0 makes every full export go partition by partition. Read at start (a
 * malformed value stops the service, naming it) and by every full export.
 */
export function readExportOrderedMax(settings = new SettingsReader()): number {
  return settings.int('Export:OrderedMax', ORDERED_EXPORT_MAX, { min: 0, max: 100_000 });
}

interface Entry {
  /** The stored form (lib/mesh/codec.ts): decoded when used. */
  text: string;
  /** The row's ETag as read, while no write of this process changed it. */
  etag?: string;
  /** The links this run wrote since (lib/mesh/store.ts patchMeshLinks), over the stored form. */
  link?: LinkState;
  /**
   * The object as the scope step decoded it, until its page takes it (given out once, not decoded again); gone
   * when the run notes a link state (the entry is replaced).
   */
  doc?: MeshObject;
}

/** An entry's object: its stored form decoded, with the links the run wrote over it. */
const docOf = (e: Entry): MeshObject => (e.link ? applyLinkState(decodeMeshObject(e.text), e.link) : decodeMeshObject(e.text));

class RunDocs {
  readonly docs = new Map<string, Entry>();
  /** Ids whose page took them already: a page run again reads them from the mesh. */
  readonly taken = new Set<string>();
  /** The pages of ids as the scope step wrote them (a page's list never changes once written). */
  pages: readonly (readonly string[])[] = [];
  constructor(readonly runId: string) {}
}

/** The one run whose objects this process keeps (the last full export it scoped). */
let current: RunDocs | undefined;

const of = (runId: string) => (current?.runId === runId ? current : undefined);

/** Forget the run's objects (its last step, a failed page); without a run id, whatever is kept. */
export function dropRunDocs(runId?: string): void {
  if (!runId || current?.runId === runId) current = undefined;
}

/**
 * The scope step of a full export: reads the type's mesh objects, orders them (see the module comment), writes
 * the pages of ids and keeps the objects for the pages. Answers how many pages, and how many of them each step
 * runs ({@link stepsOf}). Undefined (nothing written, nothing kept) when there are more than `Export:OrderedMax`
 * ({@link readExportOrderedMax}): the export then goes partition by partition.
 */
export async function orderFullExport(info: RunInfo, objectType: string): Promise<{ pages: number; steps: number[] } | undefined> {
  dropRunDocs();
  const max = readExportOrderedMax();
  if (max === 0) return undefined;
  const kept = new RunDocs(info.runId);
  const docs: MeshObject[] = [];
  let over = false;
  const read = async (partition: number) => {
    for await (const page of iterateMeshRows(objectType, partition)) {
      if (over) return;
      for (const { doc, etag, text, link } of page) {
        docs.push(doc);
        kept.docs.set(doc.id, { text, etag, doc, ...(link ? { link } : {}) });
      }
      if (docs.length > max) over = true;
    }
  };
  await read(0);
  // Mesh ids are random, so the first partition tells the size: far over the limit, the rest is not read.
  if (over || docs.length * MESH_PARTITIONS.length > max * 1.5) return undefined;
  // The other partitions a few at a time: the storage reads one while this process decodes another.
  await mapLimit(
    MESH_PARTITIONS.slice(1).map((_, i) => i + 1),
    READ_PARTITIONS_AT_ONCE,
    read,
  );
  if (over) return undefined;
  // In id order, as the partitions' reads may finish in any order: the same mesh, the same pages (a cycle is cut
  // at the same place).
  docs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const pages = pagesInOrder(docs, info.connectorId);
  await Promise.all(pages.map((ids, i) => saveExportPage(info.runId, i, ids)));
  kept.pages = pages;
  // The decoded objects are kept for the first step's pages only (they run next); the others keep the stored
  // form alone (a decoded object weighs about four times its text).
  const steps = stepsOf(
    pages.map((p) => p.length),
    STEP_IDS,
  );
  const later = pages.slice(steps[0] ?? 0).flat();
  for (const id of later) {
    const e = kept.docs.get(id);
    if (e) e.doc = undefined;
  }
  if (!info.dryRun) current = kept;
  return { pages: pages.length, steps };
}

/**
 * The most ids a step of a full export in reference order runs: its pages write their connector-space rows and
 * links together at its end (StepWrites in exportPage.ts), so a larger step fills each partition's transaction
 * where a step per page wrote one transaction per partition per page.
 */
export const STEP_IDS = 4 * DEFAULT_PAGE_SIZE;

/**
 * How many pages each step runs: consecutive pages share a step while they hold at most `size` ids together
 * (the first levels of an org chart are pages of 1, 10 and 100 ids, each a whole durable step otherwise). A
 * step runs its pages one after the other, each planned after the one before it was applied and recorded, so
 * the order is the pages' order either way.
 */
export function stepsOf(sizes: readonly number[], size = DEFAULT_PAGE_SIZE): number[] {
  const steps: number[] = [];
  let ids = Infinity;
  for (const n of sizes) {
    if (ids + n <= size) {
      steps[steps.length - 1]++;
      ids += n;
    } else {
      steps.push(1);
      ids = n;
    }
  }
  return steps;
}

/** Levels at most: an org chart is far shallower; a chain of thousands must not make thousands of steps. */
export const MAX_LEVELS = 32;

/**
 * The ids in pages: by level (an object after every object to add that it names; a cycle is cut where it
 * closes; levels from MAX_LEVELS - 1 on are one), each level in pages of at most `size`, in id order within a level.
 */
export function pagesInOrder(docs: readonly MeshObject[], connectorId: string, size = DEFAULT_PAGE_SIZE): string[][] {
  const byId = new Map(docs.map((d) => [d.id, d]));
  // Only objects this export would add (not linked in the target) hold the others back.
  const toAdd = (id: string) => {
    const d = byId.get(id);
    return !!d && !d.links[connectorId];
  };
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const levelOf = (start: string): number => {
    // Iterative depth-first walk (a chain of 10,000 managers must not overflow the stack).
    const stack: { id: string; deps: string[]; i: number; max: number }[] = [];
    const push = (id: string) => {
      visiting.add(id);
      const d = byId.get(id)!;
      const deps = [...new Set(d.relationships.map((r) => r.targetId))].filter((t) => t !== id && toAdd(t));
      stack.push({ id, deps, i: 0, max: -1 });
    };
    push(start);
    let result = 0;
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (top.i < top.deps.length) {
        const dep = top.deps[top.i++];
        const known = level.get(dep);
        if (known !== undefined) top.max = Math.max(top.max, known);
        else if (!visiting.has(dep)) push(dep);
        // A dependency being visited closes a cycle: not waited for (the second pass writes that reference).
        continue;
      }
      stack.pop();
      visiting.delete(top.id);
      result = top.max + 1;
      level.set(top.id, result);
      if (stack.length) {
        const parent = stack[stack.length - 1];
        parent.max = Math.max(parent.max, result);
      }
    }
    return result;
  };
  const levels: string[][] = [];
  for (const d of docs) {
    // Deeper than MAX_LEVELS (a long chain): together in the last level, their references left to the second pass.
    const l = Math.min(level.get(d.id) ?? levelOf(d.id), MAX_LEVELS - 1);
    (levels[l] ??= []).push(d.id);
  }
  const pages: string[][] = [];
  for (const ids of levels) {
    if (!ids) continue;
    ids.sort();
    for (let i = 0; i < ids.length; i += size) pages.push(ids.slice(i, i + size));
  }
  return pages;
}

/**
 * A page's mesh objects: those the scope step read (each given out once), the others read from the mesh. Of the
 * type only, as {@link getMeshObjects} gives them.
 */
export async function pageDocs(runId: string, ids: readonly string[], objectType: string): Promise<MeshObject[]> {
  const run = of(runId);
  const out: MeshObject[] = [];
  const read: string[] = [];
  for (const id of ids) {
    const e = run && !run.taken.has(id) ? run.docs.get(id) : undefined;
    if (e) {
      run!.taken.add(id);
      out.push(e.doc ?? docOf(e));
      e.doc = undefined;
    } else read.push(id);
  }
  if (read.length) out.push(...(await getMeshObjects(read)).values());
  return out.filter((d) => d.objectType === objectType);
}

/** A page's ids as the scope step wrote them, when this process kept the run (undefined otherwise: read them). */
export function keptPage(runId: string, page: number): string[] | undefined {
  const ids = of(runId)?.pages[page];
  return ids ? [...ids] : undefined;
}

/** The ids of the objects the run's first step read, when this process kept them (undefined otherwise). */
export function runDocIds(runId: string): ReadonlySet<string> | undefined {
  const run = of(runId);
  return run ? new Set(run.docs.keys()) : undefined;
}

/** Mesh objects by id for the references of a page: the run's copies (with the links it wrote), else loadDocs. */
export function relatedLoader(runId: string): (ids: string[]) => Promise<Map<string, MeshObject>> {
  return async (ids) => {
    const run = of(runId);
    if (!run) return loadDocs(ids);
    const out = new Map<string, MeshObject>();
    const rest: string[] = [];
    for (const id of ids) {
      const e = run.docs.get(id);
      if (e) out.set(id, docOf(e));
      else rest.push(id);
    }
    if (rest.length) for (const [id, d] of await loadDocs(rest)) out.set(id, d);
    return out;
  };
}

/** The run's copy of a mesh object with the ETag it was read with, for a conditional write (patchMeshLinks `known`). */
export function knownRow(runId: string, given?: ReadonlyMap<string, MeshObject>): ((id: string) => { doc: MeshObject; etag: string } | undefined) | undefined {
  const run = of(runId);
  if (!run) return undefined;
  return (id) => {
    const e = run.docs.get(id);
    if (!e?.etag) return undefined;
    // The page's own copy when it has one (not decoded again): taken from this entry, or read since, and then as
    // new as the ETag or newer (a row written since fails the conditional write and is read again). Its links
    // are copied: the link write changes them.
    const d = given?.get(id);
    return { doc: d ? { ...d, links: { ...d.links }, ...(d.provisioned ? { provisioned: [...d.provisioned] } : {}) } : docOf(e), etag: e.etag };
  };
}

/** Whether this process keeps the run's objects (the pages' link changes can then wait for the step's end). */
export function keepsRun(runId: string): boolean {
  return !!of(runId);
}

/**
 * Link states a step planned and has not written yet (see StepWrites in exportPage.ts): the run's copies show them
 * (the next page's references resolve to the objects just added), and keep the ETag read, which the write at the
 * step's end is conditional on (its patch starts from the page's own copy, not from these).
 */
export function notePending(runId: string, linked: readonly MeshObject[]): void {
  noteLinks(runId, linked, true);
}

/**
 * States the run wrote (its links, lib/mesh/store.ts patchMeshLinks: nothing else of the object changed): kept
 * as the run's copies (the stored form as read, the links over it), their ETags no longer known.
 */
export function noteWritten(runId: string, written: readonly MeshObject[]): void {
  noteLinks(runId, written, false);
}

/** The run's copies of `docs` with their link states over the stored form as read (and its ETag when `keepEtag`). */
function noteLinks(runId: string, docs: readonly MeshObject[], keepEtag: boolean): void {
  const run = of(runId);
  if (!run) return;
  for (const d of docs) {
    const e = run.docs.get(d.id);
    if (e)
      run.docs.set(d.id, {
        text: e.text,
        ...(keepEtag && e.etag ? { etag: e.etag } : {}),
        link: { links: { ...d.links }, ...(d.provisioned?.length ? { provisioned: [...d.provisioned] } : {}), updatedOn: d.updatedOn },
      });
  }
}
