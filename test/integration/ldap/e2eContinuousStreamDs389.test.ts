import { startDs389 } from '../../support/ds389';
import { describeWithServer } from '../../support/servers';
import type { Slapd } from '../../support/slapd';
import { ldapStreamSuite } from './continuousStreamSuite';

/** Continuous mode with the change stream end to end (continuousStreamSuite.ts): a 389 DS source followed through a persistent search. */
jest.setTimeout(600_000);

describeWithServer('ds389')('continuous mode with the change stream: 389 DS persistent search', () => {
  ldapStreamSuite('persistent search', async () => (await startDs389()) as unknown as Slapd, { deltaStrategy: 'auto' });
});
