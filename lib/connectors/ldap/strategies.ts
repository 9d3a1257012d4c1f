import { adRights, dirSyncMissesDeletes } from './adRights';
import { AD_CAPABILITY_OID, all, first, namingContextOf, rootDse, type DeltaContext, type DeltaStrategy, type StrategyName } from './delta';
import { AccesslogStrategy } from './deltaAccesslog';
import { ChangelogStrategy } from './deltaChangelog';
import { TimestampStrategy } from './deltaTimestamp';
import { UsnStrategy } from './deltaUsn';
import { DirSyncStrategy } from './dirsync';
import { normalizeDn } from './values';

/**
 * The choice of the directory connector's delta strategy (delta.ts holds what they share; deltaAccesslog.ts, deltaChangelog.ts, deltaUsn.ts, deltaTimestamp.ts and dirsync.ts one strategy each). Apart
 * from them so that the strategies' files do not import each other.
 */

/** Pick the strategy: the configured one, or from the root DSE (`auto`). */
export async function deltaStrategyFor(ctx: DeltaContext): Promise<DeltaStrategy> {
  let name = ctx.configured;
  if (name === 'auto') {
    const root = await rootDse(ctx.session, ['supportedCapabilities', 'namingContexts', 'changelog', 'lastChangeNumber', 'firstChangeNumber']);
    if (all(root, 'supportedCapabilities').includes(AD_CAPABILITY_OID)) name = await adStrategy(ctx);
    else if (first(root, 'changelog') || first(root, 'lastChangeNumber') || all(root, 'namingContexts').some((n) => normalizeDn(n) === 'cn=changelog'))
      name = 'changelog';
    else {
      const nc = namingContextOf(ctx.baseDN, all(root, 'namingContexts'));
      const [ncEntry] = nc
        ? await ctx.session.search({ base: nc, scope: 'base', filter: '(objectClass=*)', attributes: ['auditContext'] }).catch(() => [])
        : [];
      name = first(ncEntry, 'auditContext') ? 'accesslog' : 'timestamp';
    }
  }
  switch (name) {
    case 'accesslog':
      return new AccesslogStrategy(ctx);
    case 'changelog':
      return new ChangelogStrategy(ctx);
    case 'usn':
      return new UsnStrategy(ctx);
    case 'dirsync':
      return new DirSyncStrategy(ctx);
    default:
      return new TimestampStrategy(ctx);
  }
}

/**
 * `auto` on Active Directory: `usn`, unless the bind account cannot list deleted objects (a USN delta would miss
 * every delete) and holds "Replicating Directory Changes" (DirSync then shows the deletes). On a Samba DC, whose
 * DirSync shows deletes to administrators only, such an account (not an administrator) gets `timestamp` instead:
 * its periodic full anchor-set comparison is the one way it sees deletes.
 */
async function adStrategy(ctx: DeltaContext): Promise<StrategyName> {
  if (!ctx.bindDN) return 'usn';
  const root = await rootDse(ctx.session, ['namingContexts', 'defaultNamingContext']);
  const nc = namingContextOf(ctx.baseDN, [...all(root, 'namingContexts'), ...all(root, 'defaultNamingContext')]);
  if (!nc) return 'usn';
  const rights = await adRights(ctx.session, ctx.bindDN, nc);
  if (rights.seesDeletedObjects || !rights.replicatingDirectoryChanges) return 'usn';
  return (await dirSyncMissesDeletes(ctx.session, ctx.bindDN, nc, rights)) ? 'timestamp' : 'dirsync';
}
