import type { CustomConnectorConfig } from '../connectors/custom';
import { directoryAttributeNames } from '../connectors/ldap';
import { directoryDefaults, type DirectoryConfig } from '../connectors/ldap/schema';
import { createCustomConnector } from '../connectors/registry';
import { isConnectorError } from '../connectors/sdk';
import { badRequest, type FieldError } from '../core/errors';
import { closestName } from '../expression/scopes';
import type { RuleRequest } from '../schemas/rules';
import { connectorConfigWithSecrets } from '../secrets/connectorSecrets';
import { listRules } from '../storage/rules';

/**
 * Attribute names are case-insensitive in LDAP, but a connector object carries them as the directory spells
 * them (`employeeID`): a rule naming `employeeid` would read nothing. So when a rule of a directory connector
 * (`ldap`, `active_directory`) is saved, the names it gives on the directory's side are looked up in the
 * directory's schema (the subschema entry's attributeTypes): an attribute the schema does not have is a 400
 * naming it (with the closest known name, "did you mean"), and a known one is stored in the schema's spelling.
 *
 * A file connector's rules are checked the same way against the columns of its files (every matching file's
 * CSV header or the keys of its first JSON records, and the columns its settings name): a rule naming
 * `deparment` is a 400 that suggests `department`. A folder with no matching file yet keeps the names as
 * written (there is nothing to check them against).
 *
 * The directory's side of each rule type: JoinRule and ProjectionRule `sourceAttribute`; an inbound FlowRule
 * `sourceAttribute`, an outbound one `targetAttribute`; a MeshComposerRule that names a reference attribute
 * (`relationshipType` and `sourceAttribute`, no `targetAttribute`) its `sourceAttribute`. `dn` and `container`
 * (which the connector adds to every object) are always accepted. A directory whose schema cannot be read
 * (no subschema, or the bind account may not read it) keeps the names as written; one that cannot be reached
 * is a 400 saying so (the rule cannot be checked).
 */

const SYNTHETIC = new Set(['dn', 'container']);

/** The fields of this rule that name an attribute of the connector's objects. */
export function directorySideFields(body: RuleRequest): Array<'sourceAttribute' | 'targetAttribute'> {
  switch (body.ruleType) {
    case 'JoinRule':
    case 'ProjectionRule':
      return ['sourceAttribute'];
    case 'FlowRule':
      return [body.direction === 'outbound' ? 'targetAttribute' : 'sourceAttribute'];
    case 'MeshComposerRule':
      return body.relationshipType && !body.targetAttribute ? ['sourceAttribute'] : [];
    default:
      return [];
  }
}

/**
 * The rule with its connector-side names in the schema's spelling (the same object when nothing changes);
 * a 400 naming each attribute the schema does not have. `connectorType`: the directory's type, or `file`.
 */
export function canonicalizeRule(body: RuleRequest, names: ReadonlyMap<string, string>, connectorType: string): RuleRequest {
  const source = connectorType === 'file' ? "a column of the connector's files" : `an attribute of the directory's schema (${connectorType} connector)`;
  const errors: FieldError[] = [];
  let out = body;
  for (const field of directorySideFields(body)) {
    const name = body[field];
    if (typeof name !== 'string' || SYNTHETIC.has(name.toLowerCase())) continue;
    const canonical = names.get(name.toLowerCase());
    if (canonical === undefined) {
      const hint = closestName(name, names.values());
      errors.push({ path: `/${field}`, message: `'${name}' is not ${source}${hint ? ` (did you mean '${hint}'?)` : ''}` });
    } else if (canonical !== name) {
      out = { ...out, [field]: canonical };
    }
  }
  if (errors.length) throw badRequest("The rule names attributes the connector's objects do not have.", errors);
  return out;
}

/** {@link canonicalizeRule} against the connector's schema or files, for a rule of a directory or file connector. */
export async function checkRuleAttributes(body: RuleRequest): Promise<RuleRequest> {
  if (!body.connectorId || !directorySideFields(body).length) return body;
  return checkRuleAttributesOf(body, await connectorConfigWithSecrets(body.connectorId.toLowerCase()));
}

/**
 * {@link checkRuleAttributes} against a connector given by its type and configuration with its secrets (a
 * configuration import checks rules against the connectors it is about to save).
 */
export async function checkRuleAttributesOf(body: RuleRequest, { type, config }: { type: string; config: Record<string, unknown> }): Promise<RuleRequest> {
  if (!directorySideFields(body).length) return body;
  if (type === 'custom' && config.implementation === 'file') return fileRuleAttributes(body, config);
  if (type !== 'ldap' && type !== 'active_directory') return body;
  let names: Map<string, string> | undefined;
  try {
    names = await directoryAttributeNames(directoryDefaults(type, config as unknown as DirectoryConfig) as DirectoryConfig & { port: number });
  } catch (err) {
    if (!isConnectorError(err)) throw err;
    throw badRequest(`The rule's attribute names cannot be checked against the directory's schema: ${err.code}: ${err.message}`, [
      { path: '/connectorId', message: "the connector's directory cannot be reached to read its schema" },
    ]);
  }
  return names ? canonicalizeRule(body, names, type) : body;
}

/**
 * The file connector's columns, for the names a rule reads from the files (an outbound flow writes a column of
 * the export file: any name goes, and so do the names the connector's outbound flows write); a folder that
 * cannot be read or has no file yet leaves the names as written.
 */
async function fileRuleAttributes(body: RuleRequest, config: Record<string, unknown>): Promise<RuleRequest> {
  if (body.ruleType === 'FlowRule' && body.direction === 'outbound') return body;
  let columns: string[] | null = null;
  try {
    const connector = createCustomConnector(config as unknown as CustomConnectorConfig) as { columnNames?: () => Promise<string[] | null> };
    columns = (await connector.columnNames?.()) ?? null;
  } catch (err) {
    if (!isConnectorError(err)) throw err;
  }
  if (!columns) return body;
  const names = new Map(columns.map((c) => [c.toLowerCase(), c]));
  if (body.connectorId)
    for (const r of await listRules({ connectorId: body.connectorId.toLowerCase(), ruleType: 'FlowRule' }))
      if (r.direction === 'outbound' && r.targetAttribute && !names.has(r.targetAttribute.toLowerCase()))
        names.set(r.targetAttribute.toLowerCase(), r.targetAttribute);
  return canonicalizeRule(body, names, 'file');
}
