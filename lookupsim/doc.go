// Package lookupsim is a faithful, deterministic fake of the CPF Batch
// Lookup Service, the provider batchhook talks to. Tests, the demo and the
// cmd/lookupsim command run against it instead of the real service.
//
// The provider's API (docs/provider-api.md) fixes the endpoints' paths, the Bearer key, the
// `limit` parameter, `next_cursor`, the 1,000-CPF cap, the limits (10
// submissions per minute, 50 batches in flight, 7 days of retention), the
// webhook body and headers, and the signature scheme. It says "not shown"
// for the request body, the response shapes, the status codes, the cursor
// parameter and the result items. This comment is the one place where we
// write down what we assume for those; everything the simulator does that
// docs/provider-api.md does not state follows from it.
//
// # Submit: POST /api/v1/batches
//
//   - Header `Authorization: Bearer <key>`; a missing or wrong key gets 401
//     `{"error":"unauthorized"}`.
//   - Body `{"cpfs":["12345678909", ...]}`, at most 1 MiB (else 413
//     `{"error":"body_too_large"}`). Unknown members and trailing data are
//     rejected: docs/provider-api.md says the body has no webhook field.
//   - Each CPF is a string of 11 digits; `.` and `-` are tolerated and
//     stripped. Check digits do not make a submission fail: a CPF with
//     wrong ones (or one digit repeated) is answered not_found. Anything
//     else is 400 `{"error":"<reason>"}`; the reason names the index, never
//     the value.
//   - Duplicates are removed (first occurrence kept, order preserved) before
//     counting; zero or more than 1,000 unique CPFs is 400.
//   - Limits: at most SubmitPerMinute accepted submissions in any rolling
//     60 s and MaxInFlight batches not yet final; beyond either, 429 with
//     `Retry-After: <seconds>` and `{"error":"rate_limited"}`.
//   - Success is 202 `{"batch_id":"b_<20 hex>","status":"processing","total_requested":N}`,
//     at once. Ids come from crypto/rand, so they are unique across runs.
//
// # Read: GET /api/v1/batches/{batch_id}?limit=N&cursor=C
//
//   - Same Bearer rule. `limit` defaults to 100; above 1,000 it is clamped to
//     1,000; not an integer or below 1 is 400.
//   - Unknown id, or a result older than Retention counted from completion:
//     404 `{"error":"not_found"}`.
//   - 200 with exactly these members, in this order:
//     `{"batch_id":"…","status":"…","results":[…],"next_cursor":"…"|null}`.
//   - While the batch is in flight: status "processing", results [] and
//     next_cursor null. That is how a poller learns the batch is not final.
//   - Once final: status is the final status, results is the page, and
//     next_cursor is an opaque string for the next page, or null on the last
//     one. A cursor is only valid for the batch that issued it; anything
//     else is 400. A failed batch serves results [] and next_cursor null.
//   - A page is byte-identical on every request for the same batch, offset
//     and limit.
//
// # Result items
//
// One per unique CPF, in submission order, compact JSON:
//
//	{"cpf":"12345678909","result":"found","profile":{"name":"…","birth_date":"YYYY-MM-DD","situation":"regular"}}
//	{"cpf":"12345678909","result":"not_found"}
//	{"cpf":"12345678909","result":"incomplete","profile":{"name":"…","birth_date":"YYYY-MM-DD"}}  (partial batches)
//	{"cpf":"12345678909","result":"pending"}                                                          (expired batches)
//
// Whether a CPF is found, and its profile, are derived from a SHA-256 of the
// CPF alone (one with wrong check digits is never found), so the same CPF gives the same answer in every batch and every
// run. Names carry non-ASCII letters (João, Conceição) on purpose, so that
// byte-exact comparisons are exercised. A partial batch has at least one
// incomplete item (the enrichment source that did not answer supplies
// `situation`), an expired batch at least one pending item, and a failed
// batch none at all.
//
// Counters: total_requested is the number of unique CPFs; total_found
// counts found and incomplete items (the billed ones); total_not_found
// counts not_found items; pending items count in neither.
//
// # Completion and the webhook
//
// A batch becomes final ProcessingDelay after submission, on a timer owned by
// the Server; requests never drive it. Its final status comes from
// Options.Outcome (default: always completed). When WebhookURL is set and
// DropNotifications is off, the Server POSTs
//
//	{"event":"batch.completed","batch_id":"…","status":"…","total_requested":N,"total_found":N,"total_not_found":N,"completed_at":"2026-11-22T10:00:00Z"}
//
// with Content-Type application/json, x-service-webhook-signature (package
// internal/signature over the exact body), X-Service-Event batch.completed
// and X-Service-Attempt 1, 2, 3…. Any non-2xx reply (redirects included), a
// timeout after DeliveryTimeout or a dropped connection is a failed attempt,
// retried after RetryBackoff, doubling, capped at one minute, up to
// MaxAttempts. Every attempt for a batch carries the same body bytes.
//
// # The payments gateway and its sandbox (docs/provider-api.md §2.4, §3.2, §4.4)
//
// The document shows the request fields, the transaction's fields and the
// three simulation URLs, and says "not shown" for required fields, status
// codes, authentication, transitions and the payment events' names and
// bodies. What we assume:
//
//   - {gateway_url} and {sandbox_url} are both this Server's listener
//     (Options.SandboxURL overrides the base written into qrcode links).
//     Clients (the batchhook CLI) take them as two settings and never
//     assume they are equal.
//   - POST /api/pix/charge (deposit) and POST /api/pix/pay (withdrawal) take
//     one JSON object with exactly the fields of 4.4, all required: an
//     unknown, repeated, missing or wrongly typed field is 400
//     `{"error":"invalid request: <field>: <rule>","field":"<field>"}`.
//     `amount` must be a JSON number (a string is refused), positive, with
//     at most two decimal places and no exponent; `document_number` must be
//     a CPF with valid check digits; `merchant_transaction_id`, names, the
//     pix key type and value must not be empty; each string is at most 256
//     bytes. Errors name the field, never its value. The body is capped at
//     64 KiB (413). `merchant_transaction_id` is echoed, not checked for
//     uniqueness.
//   - Gateway authentication: off by default; with GatewayAuthHeader and
//     GatewayAuthValue every gateway call must carry that header with that
//     value (compared in constant time), else 401 `{"error":"unauthorized"}`.
//     The simulation URLs never need it (a browser opens them).
//   - A create answers 201 `{"transaction":{…}}`, members in 2.4's order:
//     random v4 UUIDs (one merchant_id per Server), timestamps in UTC as
//     `YYYY-MM-DDThh:mm:ss+0000` from Options.Now, `transaction_type` pix,
//     `source` player, `status` pending, `error` and `e2e_id` null, and one
//     event with `success` true, `amount` the request's digits with two
//     places (as text: never through a float), `batch_id` null and
//     `qrcode_image` a data URI of a small valid PNG. A deposit (`cashin`,
//     event `auth`) has `email`, `ip_address`, `pix_message` = the request's
//     `message`, `pix_key_type`/`pix_key_value` null, a
//     `processor_transaction_id` and `qrcode`
//     `{sandbox_url}/api/transactions/<processor_transaction_id>/pay`. A
//     withdrawal (`cashout`, event `payment`) has `email` and `ip_address`
//     null (its request has neither), no `processor_transaction_id`, and
//     `qrcode` `{sandbox_url}/api/transactions/<transaction_ref>/receive`,
//     where transaction_ref is the transaction's own `id`.
//   - The simulation URLs answer GET (a browser) and POST (tools); other
//     methods 405. `/pay` takes a deposit's processor_transaction_id and
//     moves it to `paid`; `/receive` and `/refund` take a withdrawal's id
//     and move it to `paid` or `failed` (the event's `success` false).
//     `updated_at` of the transaction and its event move to now. An unknown
//     ref, or an action that does not fit the flow, is 404
//     `{"error":"not_found"}`; a transaction no longer pending is 409
//     `{"error":"transaction is paid, not pending","status":"paid"}`.
//     Success is 200 `{"result":"pay","transaction_id":"…","flow_type":"…",
//     "status":"paid","event":"transaction.paid","webhook":"queued"}`
//     (webhook: queued, not_configured or dropped).
//   - Each simulation POSTs `{"event":"transaction.paid"|"transaction.failed",
//     "transaction":{…the updated transaction…}}` to PaymentsWebhookURL,
//     signed with PaymentsSigningSecret by the same scheme as batches, with
//     X-Service-Event = the event name and X-Service-Attempt 1, 2, 3…;
//     retried exactly like batch deliveries (DeliveryTimeout, RetryBackoff,
//     MaxAttempts). Its faults: DuplicatePaymentDeliveries,
//     SignPaymentsWithBatchSecret, DropPaymentNotifications.
//   - Transactions are kept in memory until Retention after their last
//     change.
//
// # Faults
//
// Faults injects the provider misbehaviour a client must absorb: failing,
// dropped or slow GETs, repeated deliveries and lost notifications. They
// can be changed while the Server runs with SetFaults.
//
// # Clocks
//
// Options.Now drives what a client can observe as time: completed_at,
// retention and the rolling submission window. Processing and delivery
// spacing use real timers, so tests stay short.
package lookupsim
