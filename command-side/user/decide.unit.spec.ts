import { expect } from 'chai';
import { userDecider } from './decide.ts';
import type { UserCommand } from './user.ts';
import type { UserEvent } from '../../shared/domain-events/userEvents.ts';
import { deciderSpecification } from '../../test/support/deciderSpecification.ts';

const laui = '65a000000000000000000001';
const created: UserEvent = {
  type: 'UserCreated',
  data: { laui, username: 'ada', email: 'ada@example.com', password_hash: 'h1', must_change_password: true, is_admin: false },
};

const given = deciderSpecification(userDecider);

describe('user decider', () => {
  const create: UserCommand = {
    kind: 'create',
    laui,
    username: 'ada',
    email: 'ada@example.com',
    passwordHash: 'h1',
    mustChangePassword: true,
    isAdmin: false,
    isAuditor: false,
  };

  it('given no user, when created, then UserCreated carries the profile and the hash only', () => {
    given().when(create).then([created]);
  });

  it('given an existing user, when created again, then 409', () => {
    given(created).when(create).thenFails(409, 'User already exists');
  });

  it('given a user, when the current password matches, then the new hash is recorded and the flag clears', () => {
    given(created)
      .when({ kind: 'change-password', currentPasswordMatches: true, newPasswordHash: 'h2' })
      .then([{ type: 'UserPasswordChanged', data: { password_hash: 'h2' } }]);
    const state = [created, { type: 'UserPasswordChanged', data: { password_hash: 'h2' } } as UserEvent].reduce(
      userDecider.evolve,
      userDecider.initialState(),
    );
    expect(state).to.include({ exists: true, passwordHash: 'h2', mustChangePassword: false });
  });

  it('given a user, when the current password is wrong, then 401 User not authenticated', () => {
    given(created)
      .when({ kind: 'change-password', currentPasswordMatches: false, newPasswordHash: 'h2' })
      .thenFails(401, 'User not authenticated');
  });

  it('given no user, when created as an auditor, then UserCreated says so', () => {
    given()
      .when({ ...create, isAuditor: true })
      .then([{ ...created, data: { ...created.data, is_auditor: true } } as UserEvent]);
  });
  it('given a plain user, when granted the auditor role, then UserAuditorRoleChanged; granted again, nothing', () => {
    const granted: UserEvent = { type: 'UserAuditorRoleChanged', data: { is_auditor: true } };
    given(created).when({ kind: 'set-auditor', isAuditor: true }).then([granted]);
    given(created, granted).when({ kind: 'set-auditor', isAuditor: true }).then([]);
    given(created, granted)
      .when({ kind: 'set-auditor', isAuditor: false })
      .then([{ type: 'UserAuditorRoleChanged', data: { is_auditor: false } }]);
  });
  it('given no user, when the auditor role is granted, then 404 User not found', () => {
    given().when({ kind: 'set-auditor', isAuditor: true }).thenFails(404, 'User not found');
  });
  it('given no user, when a marketplace token is stored, then 404 User not found', () => {
    given()
      .when({ kind: 'update-marketplace-token', token: { v: 1, iv: 'a', tag: 'b', ct: 'c' } })
      .thenFails(404, 'User not found');
  });
  it('given no user, when the password is changed, then 404 User not found', () => {
    given().when({ kind: 'change-password', currentPasswordMatches: true, newPasswordHash: 'h2' }).thenFails(404, 'User not found');
  });
  it('given a user, when a marketplace token is stored, then MarketplaceTokenUpdated carries the sealed token (the state keeps none)', () => {
    const token = { v: 1, iv: 'a', tag: 'b', ct: 'c' } as const;
    const stored: UserEvent = { type: 'MarketplaceTokenUpdated', data: { token } };
    given(created).when({ kind: 'update-marketplace-token', token }).then([stored]);
    expect([created, stored].reduce(userDecider.evolve, userDecider.initialState())).to.deep.equal(userDecider.evolve(userDecider.initialState(), created));
  });
  it('given events, when folded, then UserCreated sets the profile and events before it are ignored', () => {
    const fold = (...events: UserEvent[]) => events.reduce(userDecider.evolve, userDecider.initialState());
    expect(fold()).to.deep.equal({ exists: false });
    expect(fold(created)).to.deep.equal({ exists: true, laui, username: 'ada', passwordHash: 'h1', mustChangePassword: true, isAdmin: false, isAuditor: false });
    expect(fold({ type: 'UserPasswordChanged', data: { password_hash: 'h2' } }, { type: 'UserAuditorRoleChanged', data: { is_auditor: true } })).to.deep.equal({ exists: false });
  });
});
