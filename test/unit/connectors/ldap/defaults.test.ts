import { directoryDefaults } from '../../../../lib/connectors/ldap/schema';

/** The port a directory connector uses when none is given (integration tests use the test server's ports). */
describe('directoryDefaults: port', () => {
  const base = { host: 'h', baseDN: 'dc=x', bindDN: 'cn=y', bindPassword: 'p' };

  it('636 with ldaps (the default security), 389 with starttls or none; a given port is kept', () => {
    expect(directoryDefaults('ldap', base).port).toBe(636);
    expect(directoryDefaults('ldap', { ...base, security: 'ldaps' }).port).toBe(636);
    expect(directoryDefaults('active_directory', { ...base, security: 'starttls' }).port).toBe(389);
    expect(directoryDefaults('ldap', { ...base, security: 'none', allowInsecure: true }).port).toBe(389);
    expect(directoryDefaults('ldap', { ...base, port: 10636 }).port).toBe(10636);
  });
});
