import type { AttributeValue } from '../connectors/sdk';
import type { FieldError } from '../core/errors';
import type { CsObject } from './model';

/**
 * A target connector's deprovisioning setting (`config.deprovisioning`): what an export does with a target
 * object whose mesh object is gone (or, with `onConditionFalse`, whose mesh object no longer satisfies the
 * provisioning condition). Pure: the engine (lib/sync/export/exportPage.ts, exportDeletes.ts) applies it.
 */
export type DeprovisioningAction = 'delete' | 'disable' | 'none';

export interface DeprovisioningSettings {
  action: DeprovisioningAction;
  /** What `disable` writes (connector-side names). On Active Directory, `accountDisabled: true` unless it names it. */
  disableAttributes: Record<string, AttributeValue>;
  /** Days (fractions allowed) between the export that first finds the object due and the deprovisioning. */
  graceDays: number;
  onConditionFalse: boolean;
  /** What an orphan sweep does with the target's orphans (lib/sync/orphans/): `disable` (default) or `delete`. */
  orphanAction: 'disable' | 'delete';
}

/** The pseudo-attribute of the Active Directory connector that sets or clears bit 2 of userAccountControl. */
export const AD_DISABLED = 'accountDisabled';

/** What a SCIM server's user has for enabled: `disable` on a `scim` connector writes `active: false` by default. */
export const SCIM_ACTIVE = 'active';

/** The setting with its defaults, from a stored (validated) connector config. */
export function deprovisioningSettings(config: Record<string, unknown>, connectorType: string): DeprovisioningSettings {
  const d = (config.deprovisioning ?? {}) as {
    action?: unknown;
    disableAttributes?: unknown;
    graceDays?: unknown;
    onConditionFalse?: unknown;
    orphanAction?: unknown;
  };
  const action: DeprovisioningAction = d.action === 'disable' || d.action === 'none' ? d.action : 'delete';
  const given = d.disableAttributes && typeof d.disableAttributes === 'object' ? { ...(d.disableAttributes as Record<string, AttributeValue>) } : {};
  const disableAttributes: Record<string, AttributeValue> = {};
  if (connectorType === 'active_directory' && !Object.keys(given).some((k) => /^(accountdisabled|useraccountcontrol)$/i.test(k)))
    disableAttributes[AD_DISABLED] = true;
  if (connectorType === 'scim' && !Object.keys(given).some((k) => /^active$/i.test(k))) disableAttributes[SCIM_ACTIVE] = false;
  Object.assign(disableAttributes, given);
  const graceDays = typeof d.graceDays === 'number' && d.graceDays > 0 ? d.graceDays : 0;
  return {
    action,
    disableAttributes,
    graceDays,
    onConditionFalse: d.onConditionFalse === true,
    orphanAction: d.orphanAction === 'delete' ? 'delete' : 'disable',
  };
}

/** The checks the schema does not express: `disable` needs `disableAttributes`, except on Active Directory and SCIM. */
export function deprovisioningChecks(connectorType: string, config: Record<string, unknown>): FieldError[] {
  const d = config.deprovisioning as { action?: unknown; disableAttributes?: Record<string, unknown> } | undefined;
  if (!d || d.action !== 'disable' || connectorType === 'active_directory' || connectorType === 'scim') return [];
  if (d.disableAttributes && Object.keys(d.disableAttributes).length) return [];
  return [
    {
      path: '/deprovisioning/disableAttributes',
      message:
        'is required with action \'disable\' (the attributes and values that mark an object disabled, e.g. { "employeeStatus": "disabled" }); only active_directory (accountDisabled) and scim (active: false) have a default',
    },
  ];
}

/** When a deprovisioning first found at `now` is due. */
export function dueAt(now: Date, graceDays: number): string {
  return new Date(now.getTime() + Math.round(graceDays * 86_400_000)).toISOString();
}

/** Whether a pending deprovisioning is due at `now`. */
export const isDue = (due: string | undefined, now: Date): boolean => !!due && Date.parse(due) <= now.getTime();

/**
 * The values the disable writes, and those the target showed for the same attributes before (kept on the
 * connector-space object, to give back on a re-enable attributes no outbound flow writes). A pseudo-attribute
 * (AD's accountDisabled) has no previous value.
 */
export function disableValues(
  settings: DeprovisioningSettings,
  row: CsObject,
): { attributes: Record<string, AttributeValue>; previous: Record<string, AttributeValue> } {
  const shown = { ...row.attributes, ...(row.exported ?? {}) };
  const previous: Record<string, AttributeValue> = {};
  for (const k of Object.keys(settings.disableAttributes)) {
    if (k === AD_DISABLED) continue;
    const key = Object.keys(shown).find((s) => s.toLowerCase() === k.toLowerCase());
    previous[k] = key === undefined ? null : shown[key];
  }
  return { attributes: { ...settings.disableAttributes }, previous };
}

/**
 * The values a re-enable writes for the attributes the disable wrote: AD's accountDisabled false; an attribute
 * an outbound flow writes, the flow's value (`flowValues`); any other, the value it had before the disable
 * (null: none, the attribute is cleared).
 */
export function enableValues(marker: NonNullable<CsObject['deprovisioned']>, flowValues: Record<string, AttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const k of marker.written ?? []) {
    if (k === AD_DISABLED) {
      out[k] = false;
      continue;
    }
    const flow = Object.keys(flowValues).find((f) => f.toLowerCase() === k.toLowerCase());
    out[flow ?? k] = flow !== undefined ? flowValues[flow] : (marker.previous?.[k] ?? null);
  }
  return out;
}

/** Attributes a target never shows on import (not recorded as exported values awaiting confirmation). */
export const isPseudoAttribute = (name: string) => name.toLowerCase() === AD_DISABLED.toLowerCase();

const valueStrings = (v: AttributeValue | undefined): string =>
  (Array.isArray(v) ? v : [v])
    .filter((x) => x !== null && x !== undefined)
    .map((x) => String(x).toLowerCase())
    .sort()
    .join('\u0000');

/**
 * Whether these attributes (as an import showed them) carry every disable value of the setting, compared
 * case-insensitively; a pseudo-attribute (AD's accountDisabled) is never imported and is not compared.
 */
export function showsDisableValues(attributes: Record<string, AttributeValue>, settings: DeprovisioningSettings): boolean {
  const shown = new Map(Object.entries(attributes).map(([k, v]) => [k.toLowerCase(), v]));
  for (const [k, v] of Object.entries(settings.disableAttributes)) {
    if (isPseudoAttribute(k)) continue;
    if (valueStrings(shown.get(k.toLowerCase())) !== valueStrings(v)) return false;
  }
  return true;
}
