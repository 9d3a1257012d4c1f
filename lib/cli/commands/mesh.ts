import type { Command } from 'commander';
import { CliError, EXIT } from '../exitCodes';
import { cellText, col, wideCol, writeOut, type Column } from '../output';
import { namesById } from '../resolve';
import { action, paged, toInt } from './context';

const OPERATORS = ['equals', 'contains', 'startswith', 'endswith', 'ispresent', 'isnotpresent', 'istrue', 'isfalse'];
const NEEDS_VALUE = new Set(['equals', 'contains', 'startswith', 'endswith']);

export interface Criterion {
  attributeName: string;
  operator: string;
  value?: string;
}

/**
 * One `--where` criterion: `attribute operator [value]`, e.g. `department equals Sales`,
 * `mail ispresent`, `displayName contains van der`. The value is the rest of the text, spaces kept.
 */
export function parseWhere(text: string): Criterion {
  const m = /^\s*(\S+)\s+(\S+)(?:\s+([\s\S]*?))?\s*$/.exec(text);
  if (!m) throw new CliError(`--where '${text}': write "attribute operator [value]", e.g. "department equals Sales".`, EXIT.usage);
  const [, attributeName, op, value] = m;
  const operator = op.toLowerCase();
  if (!OPERATORS.includes(operator)) throw new CliError(`--where '${text}': unknown operator '${op}' (one of ${OPERATORS.join(', ')}).`, EXIT.usage);
  if (NEEDS_VALUE.has(operator) && !value) throw new CliError(`--where '${text}': ${operator} needs a value.`, EXIT.usage);
  if (!NEEDS_VALUE.has(operator) && value) throw new CliError(`--where '${text}': ${operator} takes no value.`, EXIT.usage);
  return NEEDS_VALUE.has(operator) ? { attributeName, operator, value } : { attributeName, operator };
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Columns of mesh lists: identity, then the `--columns` attributes picked by the operator. */
function meshColumns(attributes: string[]): Column[] {
  return [
    col('MESH OBJECT ID', 'meshObjectId'),
    col('TYPE', 'objectType'),
    col('ANCHOR', 'anchorValue'),
    ...attributes.map((a) => col(a, (item) => cellText((item.attributeValues as Record<string, unknown> | undefined)?.[a]))),
    ...(attributes.length ? [] : [col('UPDATED', 'updatedOn')]),
  ];
}

const splitList = (v: string | undefined) =>
  v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];

/** `mesh`: the unified identity store (list, search, detail, explain, history, restore). */
export function registerMesh(program: Command): void {
  const m = program.command('mesh').description('The mesh: the unified identities');
  paged(
    m
      .command('ls')
      .description('List mesh objects, by anchor')
      .option('--type <objectType>', 'object type, e.g. User')
      .option('--search <text>', 'substring of the anchor')
      .option('--state <state>', 'deleted: list tombstones instead of live objects')
      .option('--columns <names>', 'attributes to show as columns, comma-separated'),
  ).action(
    action(async (ctx) => {
      const { type, search, state, skip, take, columns } = ctx.opts;
      const res = await ctx.api.get('mesh/objects', { objectType: type, search, state, skip, take });
      const cols = meshColumns(splitList(columns));
      if (state === 'deleted') cols.push(col('DELETED', 'deletedOn'), col('PURGE', 'purgeOn'));
      ctx.print(res, cols);
    }),
  );
  m.command('search')
    .description('Search mesh objects: criteria combined with AND (operators: ' + OPERATORS.join(', ') + ')')
    .option('--type <objectType>', 'object type')
    .option('--anchor <text>', 'substring of the anchor')
    .option('--where <criterion>', 'attribute operator [value]; repeat for AND', collect, [])
    .option('--columns <names>', 'attributes to show as columns, comma-separated')
    .option('--skip <n>', 'items to skip', toInt)
    .option('--take <n>', 'items per page', toInt)
    .action(
      action(async (ctx) => {
        const { type, anchor, where, skip, take, columns } = ctx.opts;
        const body: Record<string, unknown> = { criteria: (where as string[]).map(parseWhere) };
        if (type) body.objectType = type;
        if (anchor) body.anchorSearch = anchor;
        if (skip !== undefined) body.skip = skip;
        if (take !== undefined) body.take = take;
        ctx.print(await ctx.api.post('mesh/objects/search', body), meshColumns(splitList(columns)));
      }),
    );
  m.command('show <meshObjectId>')
    .description('A mesh object: its display name, attributes, objects in each connector, and relationships both ways')
    .action(
      action(async (ctx, id) => {
        const obj = await ctx.api.get<Record<string, unknown>>(`mesh/objects/${id}`);
        if (ctx.format !== 'table') return void ctx.print(obj);
        type Rows = Record<string, unknown>[] | undefined;
        const { attributes, relationships, incomingRelationships, connectorObjects, displayName, ...rest } = obj as {
          attributes?: Rows;
          relationships?: Rows;
          incomingRelationships?: Rows;
          connectorObjects?: Rows;
          displayName?: string;
          anchorValue?: string;
          objectType?: string;
        };
        // The header: who this is (display name), then its anchor and type.
        writeOut(`${displayName ?? String(rest.anchorValue)} (${String(rest.anchorValue)}, ${String(rest.objectType)})\n\n`);
        ctx.print(rest);
        if (attributes?.length) {
          // Each value's source is a connector id: shown by the connector's name (the id with -o wide).
          const names = await namesById(ctx.api, 'connector');
          process.stdout.write('\n');
          ctx.print({ items: attributes, totalCount: attributes.length }, [
            col('ATTRIBUTE', 'attributeName'),
            col('VALUE', 'attributeValue'),
            col('SOURCE', (a) => names.get(a.source as string) || a.source),
            wideCol('SOURCE ID', 'source'),
            col('CONFIDENCE', 'confidence'),
            col('UPDATED', 'updatedOn'),
          ]);
        }
        writeOut('\nCONNECTORS\n');
        if (connectorObjects?.length)
          ctx.print({ items: connectorObjects, totalCount: connectorObjects.length }, [
            { ...col('CONNECTOR', 'connectorName'), whole: true },
            col('STATE', (c) => String(c.state) + (c.pendingOperation ? ` (${String(c.pendingOperation)})` : '')),
            { ...col('ANCHOR', (c) => cellText(c.anchor)), whole: true },
            // A DN is pasted into the next command (or a directory tool) as the ids are: never cut.
            { ...col('DN', (c) => cellText(c.dn)), whole: true },
            col('CS OBJECT ID', 'csObjectId'),
            col('ERROR', (c) => cellText(c.error ?? c.dueOn)),
          ]);
        else writeOut('In no connector.\n');
        const both = [
          ...(relationships ?? []).map((r) => ({
            direction: 'out',
            relationship: r.relationshipType,
            object: r.targetDisplayName ?? r.targetAnchorValue,
            anchor: r.targetAnchorValue,
            meshObjectId: r.targetMeshObjectId,
          })),
          ...(incomingRelationships ?? []).map((r) => ({
            direction: 'in',
            relationship: r.type,
            object: r.fromDisplayName,
            anchor: r.fromAnchorValue,
            meshObjectId: r.fromMeshObjectId,
          })),
        ];
        writeOut('\nRELATIONSHIPS\n');
        if (both.length)
          ctx.print({ items: both, totalCount: both.length }, [
            col('DIRECTION', 'direction'),
            col('RELATIONSHIP', 'relationship'),
            col('OBJECT', 'object'),
            col('ANCHOR', 'anchor'),
            col('MESH OBJECT ID', 'meshObjectId'),
          ]);
        else writeOut('No relationships.\n');
      }),
    );
  m.command('explain <meshObjectId> <attribute>')
    .description('Why an attribute has its value (every contribution, the winner, the exports), or where a relationship such as manager comes from')
    .action(
      action(async (ctx, id, name) => {
        const ex = await ctx.api.get<Record<string, unknown>>(`mesh/objects/${id}/attributes/${encodeURIComponent(name)}/explain`);
        if (ctx.format !== 'table') return void ctx.print(ex);
        const rel = ex.relationship as
          | { targets: { displayName: string; anchorValue: string; meshObjectId: string; sources: Record<string, unknown>[] }[]; pending: { value: string }[] }
          | undefined;
        const candidatesOf = (ex.candidates as Record<string, unknown>[]) ?? [];
        if (rel && !candidatesOf.length) {
          // A relationship: the related objects, and which connector and rule gave each.
          writeOut(`${ex.attribute} = ${rel.targets.map((t) => `${t.displayName} (${t.anchorValue})`).join(', ') || '(none resolved)'}\n`);
          const sources = rel.targets.flatMap((t) => t.sources.map((s) => ({ ...s, related: t.displayName, relatedId: t.meshObjectId })));
          writeOut('\nsources:\n');
          ctx.print({ items: sources, totalCount: sources.length }, [
            col('RELATED', 'related'),
            col('CONNECTOR', (s) => cellText(s.connectorName ?? '(mesh)')),
            col('SOURCE', (s) => cellText(s.sourceAttribute)),
            col('VALUE', (s) => cellText(s.value)),
            col('RULE', (s) => cellText(s.ruleName ?? s.ruleId ?? 'reference attribute')),
            col('MESH OBJECT ID', 'relatedId'),
          ]);
          for (const p of rel.pending) writeOut(`pending: ${p.value} names no mesh object yet\n`);
          const exp = (ex.exports as Record<string, unknown>[]) ?? [];
          if (exp.length) {
            writeOut('\nexports:\n');
            ctx.print({ items: exp, totalCount: exp.length }, [
              col('CONNECTOR', 'connectorName'),
              col('TARGET ATTRIBUTE', 'targetAttribute'),
              col('VALUE', 'value'),
              col('STATE', 'state'),
            ]);
          }
          return;
        }
        writeOut(`${ex.attribute} = ${cellText(ex.value)}\n`);
        const composed = ex.composedBy as { ruleId: string; inputs: string[] } | null;
        if (composed) {
          const rule = (await namesById(ctx.api, 'rule')).get(composed.ruleId);
          writeOut(`composed by rule ${rule ? `${rule} (${composed.ruleId})` : composed.ruleId} from ${composed.inputs.join(', ')}\n`);
        }
        const candidates = (ex.candidates as Record<string, unknown>[]) ?? [];
        writeOut('\ncontributions:\n');
        ctx.print({ items: candidates, totalCount: candidates.length }, [
          col('OUTCOME', 'outcome'),
          col('CONNECTOR', 'connectorName'),
          col('SOURCE', 'sourceAttribute'),
          col('VALUE', 'value'),
          col('CONFIDENCE', 'confidence'),
          col('PRIORITY', 'priority'),
          col('UPDATED', 'updatedOn'),
        ]);
        const exports = (ex.exports as Record<string, unknown>[]) ?? [];
        if (exports.length) {
          writeOut('\nexports:\n');
          ctx.print({ items: exports, totalCount: exports.length }, [
            col('CONNECTOR', 'connectorName'),
            col('TARGET ATTRIBUTE', 'targetAttribute'),
            col('VALUE', 'value'),
            col('STATE', 'state'),
          ]);
        }
      }),
    );
  paged(m.command('history <meshObjectId>').description('What happened to a mesh object, newest first')).action(
    action(async (ctx, id) => {
      const { skip, take } = ctx.opts;
      ctx.print(await ctx.api.get(`mesh/objects/${id}/history`, { skip, take }), [
        col('TIME', 'timestamp'),
        col('OPERATION', 'operation'),
        col('RUN', 'runId'),
        col('CHANGES', (h) =>
          ((h.changes as { attribute: string; old: unknown; new: unknown }[]) ?? [])
            .map((c) => `${c.attribute}: ${cellText(c.old)} -> ${cellText(c.new)}`)
            .join('; '),
        ),
      ]);
    }),
  );
  m.command('restore <meshObjectId>')
    .description('Restore a deleted mesh object (a tombstone); targets that had it provision it again')
    .action(action(async (ctx, id) => ctx.print(await ctx.api.post(`mesh/objects/${id}/restore`))));
}
