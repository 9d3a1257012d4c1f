import { Type, type Static } from '@sinclair/typebox';
import { ConnectorApprovals, DeletionThreshold, Deprovisioning, FullSyncOnRuleChange, Thresholds } from '../../core/validation/schemas';

/**
 * Configuration of a `scim_inbound` connector: the source behind the SCIM endpoint (docs/scim.md). It has no
 * address and no secret: SCIM clients push to the service, and the connector imports what they pushed. The
 * guard rails are those of every connector: a push the thresholds refuse lands nowhere.
 */
export const ScimInboundConfigSchema = Type.Object(
  {
    deletionThreshold: Type.Optional(DeletionThreshold()),
    thresholds: Type.Optional(Thresholds()),
    approvals: Type.Optional(ConnectorApprovals()),
    deprovisioning: Type.Optional(Deprovisioning()),
    fullSyncOnRuleChange: Type.Optional(FullSyncOnRuleChange()),
  },
  { $id: 'ScimInboundConnectorConfig', additionalProperties: false },
);

export type ScimInboundConfig = Static<typeof ScimInboundConfigSchema>;
