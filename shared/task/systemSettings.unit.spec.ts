import { expect } from 'chai';
import {
  DEFAULT_CONNECTION_OPERATOR_MAPPING,
  DEFAULT_SYSTEM_SETTINGS,
  effectiveActionTimeout,
  isCronHeartbeatDead,
  projectSchedulerInterval,
  resolveSystemSettings,
} from './systemSettings.ts';

describe('system settings', () => {
  it('given no system config items, when resolved, then the defaults apply without warnings', () => {
    const { settings, warnings } = resolveSystemSettings([]);
    expect(warnings).to.deep.equal([]);
    expect(settings.enforce_connection_operator_mapping).to.equal(false);
    expect(settings.check_completion_timeout_seconds).to.equal(3600);
    expect(settings.action_timeout_seconds).to.equal(300);
    expect(settings.project_scheduler_interval).to.equal(5);
    expect(settings.heartbeat_interval_seconds).to.equal(10);
    expect(settings.stale_heartbeat_seconds).to.equal(60);
    expect(settings.connection_operator_mapping).to.deep.equal(DEFAULT_CONNECTION_OPERATOR_MAPPING);
    expect(settings.project_cron_intervals).to.deep.equal({});
  });

  it('given several items setting the same key, when resolved, then the item with the greatest name wins whatever the input order', () => {
    const items = [
      { name: 'b-site', content: { action_timeout_seconds: 600 } },
      { name: 'a-base', content: { action_timeout_seconds: 120, check_completion_timeout_seconds: 90 } },
    ];
    const { settings } = resolveSystemSettings(items);
    expect(settings.action_timeout_seconds).to.equal(600);
    expect(settings.check_completion_timeout_seconds).to.equal(90);
    expect(resolveSystemSettings([...items].reverse()).settings.action_timeout_seconds).to.equal(600);
  });

  it('given two items with the same name, when resolved, then the later one in input order wins', () => {
    const { settings } = resolveSystemSettings([
      { name: 'same', content: { project_scheduler_interval: 7 } },
      { name: 'same', content: { project_scheduler_interval: 9 } },
    ]);
    expect(settings.project_scheduler_interval).to.equal(9);
  });

  it('given values of the wrong type, when resolved, then they are ignored with a warning and the earlier value stays', () => {
    const { settings, warnings } = resolveSystemSettings([
      { name: 'a', content: { action_timeout_seconds: 120 } },
      { name: 'b', content: { action_timeout_seconds: '600', enforce_connection_operator_mapping: 'yes', check_completion_timeout_seconds: -1 } },
    ]);
    expect(settings.action_timeout_seconds).to.equal(120);
    expect(settings.enforce_connection_operator_mapping).to.equal(false);
    expect(settings.check_completion_timeout_seconds).to.equal(3600);
    expect(warnings).to.deep.equal([
      'system config b: action_timeout_seconds must be a positive integer, got "600"; ignored',
      'system config b: enforce_connection_operator_mapping must be a boolean, got "yes"; ignored',
      'system config b: check_completion_timeout_seconds must be a positive integer, got -1; ignored',
    ]);
  });

  it('given config items of another config_type or deleted ones, when resolved, then they are skipped', () => {
    const { settings } = resolveSystemSettings([
      { name: 'a', config_type: 'task', content: { enforce_connection_operator_mapping: true } },
      { name: 'b', config_type: 'system', deleted_at: '2024-01-01T00:00:00Z', content: { enforce_connection_operator_mapping: true } },
    ]);
    expect(settings.enforce_connection_operator_mapping).to.equal(false);
  });

  it('given a mapping setting, when resolved, then it replaces the default mapping entirely; a malformed one is ignored', () => {
    const good = resolveSystemSettings([{ name: 'm', content: { enforce_connection_operator_mapping: true, connection_operator_mapping: { aws: ['python'] } } }]);
    expect(good.settings.enforce_connection_operator_mapping).to.equal(true);
    expect(good.settings.connection_operator_mapping).to.deep.equal({ aws: ['python'] });
    const bad = resolveSystemSettings([{ name: 'm', content: { connection_operator_mapping: { aws: 'python' } } }]);
    expect(bad.settings.connection_operator_mapping).to.deep.equal(DEFAULT_CONNECTION_OPERATOR_MAPPING);
    expect(bad.warnings).to.have.length(1);
  });

  it('given <project_name>_cron_interval keys, when resolved, then they override the scheduler interval of that project only', () => {
    const { settings, warnings } = resolveSystemSettings([
      { name: 's', content: { project_scheduler_interval: 4, sales_cron_interval: 30, ops_cron_interval: 'fast' } },
    ]);
    expect(projectSchedulerInterval(settings, 'sales')).to.equal(30);
    expect(projectSchedulerInterval(settings, 'ops')).to.equal(4);
    expect(projectSchedulerInterval(settings, 'other')).to.equal(4);
    expect(warnings).to.deep.equal(['system config s: ops_cron_interval must be a positive number, got "fast"; ignored']);
  });

  it('given unknown keys and a non-object content, when resolved, then unknown keys are kept in extra and the bad item warned', () => {
    const { settings, warnings } = resolveSystemSettings([
      { name: 'x', content: { email_totp: true } },
      { name: 'y', content: [] as unknown as Record<string, unknown> },
    ]);
    expect(settings.extra).to.deep.equal({ email_totp: true });
    expect(warnings).to.deep.equal(['system config y: content is not an object; ignored']);
  });

  it('given resolved settings are changed, when the defaults are read again, then they are unchanged', () => {
    const { settings } = resolveSystemSettings([]);
    settings.connection_operator_mapping.aws = ['sql'];
    settings.project_cron_intervals.p = 1;
    expect(DEFAULT_SYSTEM_SETTINGS.connection_operator_mapping.aws).to.deep.equal(['python', 'javascript']);
    expect(resolveSystemSettings([]).settings.project_cron_intervals).to.deep.equal({});
  });

  it('given a cron heartbeat, when checked against 3 intervals, then it is dead only when older than 3 intervals or missing', () => {
    const now = new Date('2024-01-01T00:00:15Z');
    expect(isCronHeartbeatDead(new Date('2024-01-01T00:00:00Z'), now, 5)).to.equal(false);
    expect(isCronHeartbeatDead(new Date('2023-12-31T23:59:59.999Z'), now, 5)).to.equal(true);
    expect(isCronHeartbeatDead(null, now, 5)).to.equal(true);
  });

  it('given action timeouts, when the effective timeout is asked, then action_timeout_seconds is the minimum', () => {
    const { settings } = resolveSystemSettings([]);
    expect(effectiveActionTimeout(10, settings)).to.equal(300);
    expect(effectiveActionTimeout(900, settings)).to.equal(900);
    expect(effectiveActionTimeout(undefined, settings)).to.equal(300);
  });
});
