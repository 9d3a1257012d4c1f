import { ConfigError, SettingsReader } from '../core/config';
import { isSecretAttribute } from '../core/secretAttributes';
import type { AttributeValue } from '../core/values';

/**
 * The display name of a mesh object: what the Admin API's detail (`displayName`), the CLI's `mesh show` header
 * and the console's object page show beside the anchor, from the object's own attributes.
 *
 * Setting `Mesh:DisplayAttributes` (`Mesh__DisplayAttributes`): per object type, an ordered list of choices;
 * the first that gives a non-empty value wins, and an object none gives a value for shows its anchor. Types
 * are separated by `;`, choices by `|`, and a choice of several attributes joined by `+` is their values
 * joined by one space (all must be present), e.g.
 * `User=displayName|cn|givenName+sn;Group=displayName|cn`. Types and attribute names match case-insensitively.
 * A type the setting does not name uses the defaults: `User` `displayName|cn|givenName+sn`, any other type
 * `displayName|cn`. A secret attribute (lib/core/secretAttributes.ts) is never used.
 */

const SETTING = 'Mesh:DisplayAttributes';
/** One choice: the attribute names whose values are joined by a space. */
export type DisplayChoice = readonly string[];
export type DisplayAttributes = ReadonlyMap<string, readonly DisplayChoice[]>;

const DEFAULT_USER: readonly DisplayChoice[] = [['displayName'], ['cn'], ['givenName', 'sn']];
const DEFAULT_OTHER: readonly DisplayChoice[] = [['displayName'], ['cn']];
const NAME = /^[A-Za-z0-9_.-]+$/;

/** The setting's text compiled (lower-cased type -> choices); a malformed entry is a ConfigError naming it. */
export function compileDisplayAttributes(text: string | undefined): DisplayAttributes {
  const out = new Map<string, readonly DisplayChoice[]>();
  for (const part of (text ?? '').split(';').map((s) => s.trim())) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const type = eq > 0 ? part.slice(0, eq).trim() : '';
    if (!type || !NAME.test(type))
      throw new ConfigError(SETTING, `the entry '${part}' is not 'Type=attribute|attribute+attribute', e.g. 'User=displayName|cn|givenName+sn'.`);
    const choices = part
      .slice(eq + 1)
      .split('|')
      .map((c) => c.split('+').map((n) => n.trim()));
    for (const c of choices)
      for (const n of c)
        if (!NAME.test(n)) throw new ConfigError(SETTING, `the entry '${part}' names '${n}', which is not an attribute name (letters, digits, '-', '_', '.').`);
    if (out.has(type.toLowerCase())) throw new ConfigError(SETTING, `the type '${type}' is named twice.`);
    out.set(type.toLowerCase(), choices);
  }
  return out;
}

/** The choices of an object type: the setting's, else the defaults. */
export function displayChoices(list: DisplayAttributes, objectType: string): readonly DisplayChoice[] {
  const type = objectType.toLowerCase();
  return list.get(type) ?? (type === 'user' ? DEFAULT_USER : DEFAULT_OTHER);
}

/** The text of a value: a list's first non-empty value; null for no value. */
function textOf(v: AttributeValue | undefined): string | null {
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && x !== '') return String(x);
    return null;
  }
  return v === null || v === undefined || v === '' ? null : String(v);
}

/**
 * The display name from `value(name)` (an attribute's consolidated value, the name matched case-insensitively
 * by the caller), else the anchor.
 */
export function displayNameOf(
  list: DisplayAttributes,
  o: { objectType: string; anchorValue: string },
  value: (name: string) => AttributeValue | undefined,
): string {
  for (const choice of displayChoices(list, o.objectType)) {
    const parts: string[] = [];
    for (const name of choice) {
      const t = isSecretAttribute(name) ? null : textOf(value(name));
      if (t === null || t.trim() === '') break;
      parts.push(t.trim());
    }
    if (parts.length === choice.length) return parts.join(' ');
  }
  return o.anchorValue;
}

let current: DisplayAttributes | undefined;

/** `Mesh:DisplayAttributes` read and compiled (at start by a service step; a malformed setting stops the start). */
export function readDisplayAttributes(settings = new SettingsReader()): DisplayAttributes {
  return compileDisplayAttributes(settings.raw(SETTING));
}

export function useDisplayAttributes(list: DisplayAttributes | undefined): void {
  current = list;
}

/** The list in use (read on first use when no service step set it: tools and tests). */
export function displayAttributes(): DisplayAttributes {
  return (current ??= readDisplayAttributes());
}
