import { promises as fs } from 'node:fs';
import { ConnectorError, type AttributeSchema, type ConnectionTestResult, type ConnectorSchema } from '../sdk';
import { folderError, type FileStat } from './files';
import { guardedFiles, readFile, type FileParts } from './reading';

/**
 * The connection test: the folder is inside the file roots and is a folder, and every matching file's header
 * (CSV) or first records (JSON) can be read. Throws a ConnectorError saying what failed.
 */
export async function testConnection(parts: Pick<FileParts, 'config' | 'guard'>): Promise<ConnectionTestResult> {
  await parts.guard.folder();
  const st = await fs.stat(parts.config.folder).catch((err) => {
    throw folderError(err, parts.config.folder);
  });
  if (!st.isDirectory()) throw new ConnectorError('configuration_invalid', `path: cannot read the folder '${parts.config.folder}': it is not a folder.`);
  const files = await guardedFiles(parts);
  for (const f of files) await readHeader(parts, f);
  return { message: `${files.length} file(s) matching ${parts.config.filePattern} in ${parts.config.folder}.` };
}

/** The schema: one object type whose attributes are the columns of every file, with the types the first records show. */
export async function schema(parts: Pick<FileParts, 'config' | 'guard'>): Promise<ConnectorSchema> {
  const cfg = parts.config;
  const names: string[] = [cfg.anchorColumn];
  const types = new Map<string, AttributeSchema['type']>();
  const files = await guardedFiles(parts);
  for (const f of files) {
    const h = await readHeader(parts, f);
    for (const [n, t] of h) {
      if (!names.includes(n)) names.push(n);
      if (t && !types.has(n)) types.set(n, t);
    }
  }
  for (const n of [...cfg.multiValueColumns, ...cfg.references.keys(), cfg.dnColumn, cfg.containerColumn]) {
    if (n && !names.includes(n)) names.push(n);
  }
  const attributes = names.map((name) => {
    const a: AttributeSchema = { name, type: types.get(name) ?? 'string', multiValued: cfg.multiValueColumns.has(name) };
    if (name === cfg.anchorColumn) a.required = true;
    const ref = cfg.references.get(name);
    if (ref) a.reference = { ...ref };
    return a;
  });
  return { objectTypes: [{ name: cfg.objectType, anchorAttribute: cfg.anchorColumn, attributes }] };
}

/**
 * The names a rule may give on this connector's side: every file's columns (CSV header, JSON keys of the first
 * records) and the configured ones; null when no file matches yet (nothing to check a name against).
 */
export async function columnNames(parts: Pick<FileParts, 'config' | 'guard'>): Promise<string[] | null> {
  const files = await guardedFiles(parts);
  if (!files.length) return null;
  return (await schema(parts)).objectTypes[0].attributes.map((a) => a.name);
}

/** Column names (CSV header, or the keys of the first JSON records with their value types). */
async function readHeader(parts: Pick<FileParts, 'config' | 'guard'>, f: FileStat): Promise<Map<string, AttributeSchema['type'] | undefined>> {
  const out = new Map<string, AttributeSchema['type'] | undefined>();
  let n = 0;
  for await (const item of readFile(parts, f, 0, 1)) {
    if (item.header) {
      for (const h of item.header) if (h) out.set(h, undefined);
      break;
    }
    const r = item.make();
    if ('object' in r) {
      for (const [k, v] of Object.entries(r.object.attributes)) {
        const first = Array.isArray(v) ? v.find((x) => x !== null) : v;
        const t = typeof first === 'number' ? 'number' : typeof first === 'boolean' ? 'boolean' : first === undefined || first === null ? undefined : 'string';
        if (!out.get(k)) out.set(k, t);
      }
    }
    if (++n >= 100) break;
  }
  return out;
}
