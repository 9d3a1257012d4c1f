import { distinctRelationships, type Relationship } from '../../../lib/mesh/model';

describe('distinctRelationships', () => {
  const rel = (type: string, targetId: string, c?: string): Relationship => ({
    type,
    targetId,
    targetAnchor: targetId.toUpperCase(),
    targetType: 'User',
    ...(c ? { c } : {}),
  });

  it('lists one relationship per type and target, the first of each in order', () => {
    const fromDirectory = rel('manager', 'a', 'dir');
    const fromHr = rel('manager', 'a', 'hr');
    const member = rel('member', 'a', 'dir');
    const other = rel('manager', 'b', 'hr');
    expect(distinctRelationships([fromDirectory, member, fromHr, other])).toEqual([fromDirectory, member, other]);
  });

  it('returns a copy, and keeps an empty or single list as it is', () => {
    const one = [rel('manager', 'a')];
    expect(distinctRelationships(one)).toEqual(one);
    expect(distinctRelationships(one)).not.toBe(one);
    expect(distinctRelationships([])).toEqual([]);
  });
});
