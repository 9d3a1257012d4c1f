import { closeParkedSearches } from '../../../lib/connectors/ldap';
import { connectorContract } from '../../support/connectorContract';
import { describeWithServer } from '../../support/servers';
import { startSlapd, type Slapd } from '../../support/slapd';
import { SlapdFixture } from './ldapFixture';

describeWithServer('slapd')('directory connector on slapd', () => {
  let slapd: Slapd;
  beforeAll(async () => {
    slapd = await startSlapd();
  });
  afterAll(async () => {
    await closeParkedSearches();
    await slapd?.stop();
  });

  connectorContract({
    name: 'ldap (slapd, ldaps, accesslog)',
    capabilities: { delta: true, rename: true, export: true, malformed: false },
    makeFixture: async () => new SlapdFixture(slapd).init(),
  });
});
