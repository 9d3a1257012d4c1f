import { createHttpHeaders, createPipelineRequest, RestError, type PipelineResponse } from '@azure/core-rest-pipeline';
import { brokenSocketRetry } from '../../../lib/storage/tables';

/** The storage clients send a request again when its socket broke while it was written (EPIPE), and only then. */
const request = createPipelineRequest({ url: 'http://127.0.0.1:10002/devstoreaccount1/T', method: 'POST', body: '{}' });
const ok: PipelineResponse = { request, status: 204, headers: createHttpHeaders() };
const broken = () => new RestError('write EPIPE', { code: 'EPIPE' });

test('an EPIPE is sent again, up to three more times', async () => {
  let calls = 0;
  const next = async () => {
    calls++;
    if (calls < 3) throw broken();
    return ok;
  };
  await expect(brokenSocketRetry.sendRequest(request, next)).resolves.toBe(ok);
  expect(calls).toBe(3);
  let always = 0;
  await expect(
    brokenSocketRetry.sendRequest(request, async () => {
      always++;
      throw broken();
    }),
  ).rejects.toMatchObject({ code: 'EPIPE' });
  expect(always).toBe(4);
});

test('any other failure is not sent again', async () => {
  let calls = 0;
  const refused = new RestError('conflict', { statusCode: 409 });
  await expect(
    brokenSocketRetry.sendRequest(request, async () => {
      calls++;
      throw refused;
    }),
  ).rejects.toBe(refused);
  expect(calls).toBe(1);
});
