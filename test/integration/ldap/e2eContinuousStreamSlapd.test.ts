import { describeWithServer } from '../../support/servers';
import { startSlapd } from '../../support/slapd';
import { ldapStreamSuite } from './continuousStreamSuite';

/** Continuous mode with the change stream end to end (continuousStreamSuite.ts): an OpenLDAP source followed through syncrepl. */
jest.setTimeout(600_000);

describeWithServer('slapd')('continuous mode with the change stream: OpenLDAP syncrepl', () => {
  ldapStreamSuite('syncrepl', () => startSlapd());
});
