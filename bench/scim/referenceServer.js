'use strict';
/**
 * The reference SCIM server of the tests (test/support/scimReference.ts: SCIMMY on express, in memory) in its
 * own process for bench/scim/client.js, so the client's CPU time and the server's are measured apart. Tells
 * its parent `{ baseUrl, token }` when listening; answers `cpu` with its CPU seconds and resource counts.
 */
require('../ldap/ts-register');
const { startScimReference } = require('../../test/support/scimReference');

(async () => {
  const ref = await startScimReference();
  process.on('message', async (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send({ type: 'cpu', cpuSeconds: (u.user + u.system) / 1e6, users: ref.users.size, requests: ref.requests.length });
    } else if (m === 'stop') {
      await ref.stop();
      process.exit(0);
    }
  });
  process.send({ type: 'ready', baseUrl: ref.baseUrl, token: ref.token });
})();
