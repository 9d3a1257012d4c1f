import { directoryAttributeNames } from '../connectors/ldap';
import { directoryDefaults, type DirectoryConfig } from '../connectors/ldap/schema';
import { isConnectorError } from '../connectors/sdk';
import { badRequest, type FieldError } from '../core/errors';
import type { RuleRequest } from '../schemas/rules';
import { connectorConfigWithSecrets } from '../secrets/connectorSecrets';

/**
 * Attribute names are case-insensitive in LDAP, but a connector object carries them as the directory spells
 * them (`employeeID`): a rule naming `employeeid` would read nothing. So when a rule of a directory connector
 * (`ldap`, `active_directory`) is saved, the names it gives on the directory's side are looked up in the
 * directory's schema (the subschema entry's attributeTypes): an attribute the schema does not have is a 400
 * naming it, and a known one is stored in the schema's spelling.
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
 * The rule with its directory-side names in the schema's spelling (the same object when nothing changes);
 * a 400 naming each attribute the schema does not have.
 */
export function canonicalizeRule(body: RuleRequest, names: ReadonlyMap<string, string>, connectorType: string): RuleRequest {
  const errors: FieldError[] = [];
  let out = body;
  for (const field of directorySideFields(body)) {
    const name = body[field];
    if (typeof name !== 'string' || SYNTHETIC.has(name.toLowerCase())) continue;
    const canonical = names.get(name.toLowerCase());
    if (canonical === undefined) {
      errors.push({ path: `/${field}`, message: `'${name}' is not an attribute of the directory's schema (${connectorType} connector)` });
    } else if (canonical !== name) {
      out = { ...out, [field]: canonical };
    }
  }
  if (errors.length) throw badRequest("The rule names attributes the directory's schema does not have.", errors);
  return out;
}

/** {@link canonicalizeRule} against the connector's directory, for a rule of a directory connector. */
export async function directoryRuleAttributes(body: RuleRequest): Promise<RuleRequest> {
  if (!body.connectorId || !directorySideFields(body).length) return body;
  return directoryRuleAttributesOf(body, await connectorConfigWithSecrets(body.connectorId.toLowerCase()));
}

/**
 * {@link directoryRuleAttributes} against a connector given by its type and configuration with its secrets (a
 * configuration import checks rules against the connectors it is about to save).
 */
export async function directoryRuleAttributesOf(body: RuleRequest, { type, config }: { type: string; config: Record<string, unknown> }): Promise<RuleRequest> {
  if (!directorySideFields(body).length) return body;
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
