/**
 * The tutorial's design (docs/tutorial.md sections 2, 4, 5 and 8), written once for the tests and the soak that
 * use it: the PostgreSQL `staff` table, the staff connector's query and statements as the tutorial gives them,
 * the directory's DN template, and the rules.
 */

/** Section 2: the `staff` table, `manager_id` a deferred foreign key. */
export const STAFF_TABLE = `CREATE TABLE staff (
  employee_id text PRIMARY KEY,
  given_name  text,
  surname     text,
  mail        text,
  department  text,
  manager_id  text REFERENCES staff (employee_id) DEFERRABLE INITIALLY DEFERRED
)`;

/** Section 4: what the staff connector reads. */
export const STAFF_QUERY = 'SELECT employee_id, given_name, surname, mail, department, manager_id FROM staff';

/** Section 4: the statements as the tutorial gives them (the update names every column). */
export const STAFF_STATEMENTS = {
  insert:
    'INSERT INTO staff (employee_id, given_name, surname, mail, department, manager_id) VALUES (:employee_id, :given_name, :surname, :mail, :department, :manager_id)',
  update:
    'UPDATE staff SET given_name = :given_name, surname = :surname, mail = :mail, department = :department, manager_id = :manager_id WHERE employee_id = :anchor',
  delete: 'DELETE FROM staff WHERE employee_id = :anchor',
};

/** Section 4: one OU per department below the connector's baseDN. */
export const DIRECTORY_DN_TEMPLATE = "'uid=' + dnEscape(source.uid) + ',ou=' + dnEscape(source.departmentNumber) + ',' + baseDN";

/**
 * Sections 5 and 8, rule for rule: HR's projection and inbound flows, the targets' join rules, their outbound
 * flows and the manager flows. `add` creates one rule (the caller's way: its own names, its own checks).
 */
export async function tutorialRules(
  add: (body: Record<string, unknown>) => Promise<unknown>,
  ids: { hr: string; directory: string; staff: string },
): Promise<void> {
  const { hr, directory, staff } = ids;
  await add({ ruleName: 'HR: people are users', ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'employeeId', objectType: 'User' });
  for (const a of ['employeeId', 'givenName', 'sn', 'mail', 'department', 'title'])
    await add({ ruleName: `HR: ${a}`, ruleType: 'FlowRule', connectorId: hr, direction: 'inbound', sourceAttribute: a, targetAttribute: a, confidence: 80 });
  await add({
    ruleName: 'Directory: join on employeeNumber',
    ruleType: 'JoinRule',
    connectorId: directory,
    sourceAttribute: 'employeeNumber',
    targetAttribute: 'employeeId',
  });
  await add({
    ruleName: 'Staff: join on employee_id',
    ruleType: 'JoinRule',
    connectorId: staff,
    sourceAttribute: 'employee_id',
    targetAttribute: 'employeeId',
  });
  const out = (connectorId: string, ruleName: string, sourceAttribute: string, targetAttribute: string, transformScript?: string) =>
    add({
      ruleName,
      ruleType: 'FlowRule',
      connectorId,
      direction: 'outbound',
      sourceAttribute,
      targetAttribute,
      ...(transformScript ? { transformScript } : {}),
    });
  await out(directory, 'Directory: uid', 'employeeId', 'uid');
  await out(directory, 'Directory: employeeNumber', 'employeeId', 'employeeNumber');
  await out(directory, 'Directory: givenName', 'givenName', 'givenName');
  await out(directory, 'Directory: sn', 'sn', 'sn');
  await out(directory, 'Directory: cn', 'sn', 'cn', "object.givenName + ' ' + object.sn");
  await out(directory, 'Directory: mail', 'mail', 'mail');
  await out(directory, 'Directory: departmentNumber', 'department', 'departmentNumber');
  await out(directory, 'Directory: title', 'title', 'title');
  await out(directory, 'Directory: manager', 'manager', 'manager');
  await out(staff, 'Staff: employee_id', 'employeeId', 'employee_id');
  await out(staff, 'Staff: given_name', 'givenName', 'given_name');
  await out(staff, 'Staff: surname', 'sn', 'surname');
  await out(staff, 'Staff: mail', 'mail', 'mail');
  await out(staff, 'Staff: department', 'department', 'department');
  await out(staff, 'Staff: manager_id', 'manager', 'manager_id');
}
