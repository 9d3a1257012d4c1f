import { configExpressionErrors, expressionErrors } from '../../../lib/api/expressions';

describe('expressionErrors (create/update check of a script)', () => {
  it('refuses an unknown name, naming it, its line and column and the names of the scope', () => {
    expect(expressionErrors('sourc.toUpperCase()', '/transformScript', 'rule')).toEqual([
      {
        path: '/transformScript',
        message: "'sourc' is not defined at line 1, column 1 (offset 0) (did you mean 'source'?); the names this script can read are source, object",
      },
    ]);
    expect(expressionErrors('source.cn +\n  mail', '/transformScript', 'rule')).toEqual([
      { path: '/transformScript', message: "'mail' is not defined at line 2, column 3 (offset 14); the names this script can read are source, object" },
    ]);
  });

  it('still reports syntax errors first (a script that does not parse has no names to check)', () => {
    expect(expressionErrors('sourc +', '/transformScript', 'rule')).toEqual([
      { path: '/transformScript', message: expect.stringMatching(/^does not parse: .* at line 1, column 8 \(offset 7\)$/) },
    ]);
  });

  it('accepts the scripts of each scope', () => {
    expect(expressionErrors('source.toLowerCase()', '/t', 'rule')).toEqual([]);
    expect(expressionErrors('object.objectClass.includes("groupOfNames")', '/t', 'rule')).toEqual([]);
    expect(expressionErrors(null, '/t', 'rule')).toEqual([]);
    expect(expressionErrors('source.employeeId.startsWith("H")', '/t', 'provisioningCondition')).toEqual([]);
    expect(expressionErrors('"uid=" + dnEscape(source.uid) + ",ou=" + dnEscape(source.departmentNumber) + "," + baseDN', '/t', 'exportDnTemplate')).toEqual([]);
  });
});

describe('configExpressionErrors', () => {
  it('checks each expression field of a configuration by its own scope, under /config', () => {
    const config = { exportDnTemplate: '"cn=" + source.cn + "," + baseDN', provisioningCondition: 'baseDN != null' };
    expect(configExpressionErrors(config, ['exportDnTemplate', 'provisioningCondition'])).toEqual([
      { path: '/config/provisioningCondition', message: expect.stringContaining("'baseDN' is not defined at line 1, column 1") },
    ]);
  });
});
