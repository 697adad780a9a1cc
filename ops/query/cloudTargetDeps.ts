import type { CloudQuerySettings } from './cloudQuerySettings.ts';
import type { EngineSlots } from './engineSlots.ts';

/**
 * What the cloud targets' factories share: settings, the embedded engine's slots, and (tests
 * only) service endpoints pointed at loopback stubs; production uses each SDK's own endpoints
 * (which the AWS SDK lets AWS_ENDPOINT_URL_<SERVICE> override).
 */
export interface CloudTargetDeps {
  settings: CloudQuerySettings;
  slots: EngineSlots;
  endpoints?: {
    athena?: string;
    redshiftData?: string;
    sts?: string;
    s3?: string;
    bigquery?: string;
    /** The blob endpoint for an account_name + account_key connection. */
    azureBlob?: (account: string) => string;
  };
  /** First poll delay of Athena and Redshift statements (tests shorten it). */
  pollFirstMs?: number;
}
