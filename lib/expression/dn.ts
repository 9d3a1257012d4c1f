/**
 * Distinguished name helpers of the expression language (`dnEscape`, `dnParent`, `dnRdnValue`). Pure string
 * functions: the evaluator converts arguments and checks lengths around them. They are the service's one DN
 * module's (lib/core/ldapName.ts, RFC 4514), under the names the evaluator uses.
 */
export { escapeDnValue as escapeRdnValue, firstRdnValue, parentDn } from '../core/ldapName';
