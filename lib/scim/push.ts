import type { ScimHooksFactory } from './endpoint';

/** Writes land in the store only (no `scim` connector imports them). */
export const noSettle: ScimHooksFactory = () => ({ settle: async () => undefined });
