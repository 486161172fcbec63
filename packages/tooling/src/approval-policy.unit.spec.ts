import { describe, expect, it } from 'vitest';
import { defaultArgsValidator } from './args-validator.js';
import type { ApprovalPolicy } from './approval-policy.js';
import { approvalFor, approvalPolicyProblem, fillApprovalMessage } from './approval-policy.js';

const matches = (schema: Record<string, unknown>, args: unknown) =>
  defaultArgsValidator.validate(schema, args).ok;
const deletePublished: ApprovalPolicy = {
  when: { type: 'object', properties: { status: { const: 'published' } }, required: ['status'] },
  message: 'Delete page {{args.id}} ({{ args.meta.title }})?',
};

describe('approval policies', () => {
  it('never and always decide without a policy verdict', () => {
    expect(approvalFor('never', {}, matches)).toEqual({ required: false, byPolicy: false });
    expect(approvalFor('always', {}, matches)).toEqual({ required: true, byPolicy: false });
  });

  it('when: arguments that match need approval, with the message filled; others pass by policy', () => {
    expect(
      approvalFor(deletePublished, { id: 'p1', status: 'published', meta: { title: 'Home' } }, matches),
    ).toEqual({
      required: true,
      byPolicy: true,
      message: 'Delete page p1 (Home)?',
    });
    expect(approvalFor(deletePublished, { id: 'p2', status: 'draft' }, matches)).toEqual({
      required: false,
      byPolicy: true,
    });
  });

  it('a when that cannot be checked asks for approval', () => {
    const broken = () => {
      throw new Error('schema does not compile');
    };
    expect(approvalFor(deletePublished, {}, broken)).toMatchObject({ required: true, byPolicy: true });
  });

  it('fills missing values as empty, objects as JSON, long values cut', () => {
    expect(fillApprovalMessage('x={{args.x}} y={{args.y}}', { y: { a: 1 } })).toBe('x= y={"a":1}');
    expect(fillApprovalMessage('{{args.s}}', { s: 'a'.repeat(300) })).toHaveLength(201);
    expect(fillApprovalMessage('{{args.toString}}', {})).toBe('');
  });

  it('names the bad field of a policy', () => {
    expect(approvalPolicyProblem('always')).toBeUndefined();
    expect(approvalPolicyProblem(deletePublished)).toBeUndefined();
    expect(approvalPolicyProblem('sometimes')?.field).toBe('approval');
    expect(approvalPolicyProblem({ when: 'x' })?.field).toBe('approval.when');
    expect(approvalPolicyProblem({ when: {}, extra: 1 })?.field).toBe('approval.extra');
    expect(approvalPolicyProblem({ when: {}, message: 'Delete {{user.id}}?' })?.field).toBe(
      'approval.message',
    );
    expect(approvalPolicyProblem({ when: {}, message: '' })?.field).toBe('approval.message');
    expect(approvalPolicyProblem({ when: {}, exceptUserRoles: ['owner'] })).toBeUndefined();
    expect(approvalPolicyProblem({ when: {}, exceptUserRoles: 'owner' })?.field).toBe(
      'approval.exceptUserRoles',
    );
    expect(approvalPolicyProblem({ when: {}, exceptUserRoles: ['two words'] })?.field).toBe(
      'approval.exceptUserRoles',
    );
  });

  it('exceptUserRoles: a listed end-user role needs no approval (by policy); others as the when says', () => {
    const policy: ApprovalPolicy = { ...deletePublished, exceptUserRoles: ['owner'] };
    const published = { id: 'p1', status: 'published' };
    expect(approvalFor(policy, published, matches, 'owner')).toEqual({ required: false, byPolicy: true });
    expect(approvalFor(policy, published, matches, 'viewer')).toMatchObject({ required: true });
    expect(approvalFor(policy, published, matches)).toMatchObject({ required: true });
  });
});
