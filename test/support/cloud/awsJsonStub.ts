import { loopbackServer, type LoopbackServer, type RecordedRequest } from './loopbackServer.ts';

export interface AwsJsonCall {
  operation: string;
  input: Record<string, unknown>;
  authorization: string;
}

/** An answer: a body (200), or an AWS error as the JSON 1.1 protocol writes it. */
export type AwsJsonAnswer = { body: unknown } | { status: number; errorType: string; message: string };

/**
 * A loopback stub of an AWS JSON 1.1 service (Athena, Redshift Data): the operation comes from the
 * X-Amz-Target header ("AmazonAthena.StartQueryExecution"), the input is the JSON body; each
 * operation's handler answers with the service's response shape.
 */
export const awsJsonStub = async (
  handlers: Record<string, (input: Record<string, unknown>, call: AwsJsonCall) => AwsJsonAnswer | Promise<AwsJsonAnswer>>,
): Promise<LoopbackServer & { calls: AwsJsonCall[] }> => {
  const calls: AwsJsonCall[] = [];
  const server = await loopbackServer(async (request: RecordedRequest, response) => {
    const operation = String(request.headers['x-amz-target'] ?? '').split('.').pop() ?? '';
    const input = (request.body === '' ? {} : JSON.parse(request.body)) as Record<string, unknown>;
    const call = { operation, input, authorization: String(request.headers.authorization ?? '') };
    calls.push(call);
    const handler = handlers[operation];
    const answer: AwsJsonAnswer = handler ? await handler(input, call) : { status: 400, errorType: 'UnknownOperationException', message: operation };
    response.setHeader('content-type', 'application/x-amz-json-1.1');
    response.setHeader('x-amzn-requestid', `req-${calls.length}`);
    if ('body' in answer) {
      response.statusCode = 200;
      response.end(JSON.stringify(answer.body));
    } else {
      response.statusCode = answer.status;
      response.setHeader('x-amzn-errortype', answer.errorType);
      response.end(JSON.stringify({ __type: answer.errorType, message: answer.message }));
    }
  });
  return { ...server, calls };
};

/**
 * A loopback stub of STS's AssumeRole (the query protocol: a form body, an XML answer), handing
 * out `temporaryKeyId` and recording the role asked for.
 */
export const stsStub = async (temporaryKeyId: string): Promise<LoopbackServer & { roles: string[] }> => {
  const roles: string[] = [];
  const server = await loopbackServer((request, response) => {
    const form = new URLSearchParams(request.body);
    roles.push(form.get('RoleArn') ?? '');
    const expiration = new Date(Date.now() + 3600_000).toISOString();
    response.setHeader('content-type', 'text/xml');
    response.end(`<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser>
      <AssumedRoleId>AROA3XFRBF535PLBIFPI4:${form.get('RoleSessionName') ?? ''}</AssumedRoleId>
      <Arn>${form.get('RoleArn') ?? ''}/${form.get('RoleSessionName') ?? ''}</Arn>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>${temporaryKeyId}</AccessKeyId>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <SessionToken>session-token-from-stub</SessionToken>
      <Expiration>${expiration}</Expiration>
    </Credentials>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata>
</AssumeRoleResponse>`);
  });
  return { ...server, roles };
};
