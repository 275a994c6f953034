package submit

// Hint says in a few words what an operator can do about an attempt's
// outcome, for the admin API and the CLI to show beside the chunk's last
// error; "" for a submitted chunk. It names variables, never their values.
func Hint(o Outcome) string {
	switch o {
	case OutcomeAuth:
		return "the provider refused the API key: fix it in BATCHHOOK_API_KEY_FILE and send SIGHUP " +
			"(a key set in BATCHHOOK_API_KEY needs a restart)"
	case OutcomeRateLimited:
		return "the provider is rate limiting (429): sent again after its Retry-After; " +
			"if it lasts, lower BATCHHOOK_SUBMIT_PER_MINUTE"
	case OutcomeServerError:
		return "the provider is unavailable (503): sent again with backoff; nothing to do unless it lasts"
	case OutcomeNotSent:
		return "the provider could not be reached: check BATCHHOOK_API_BASE_URL and the network; sent again with backoff"
	case OutcomeRejected:
		return "the provider refused the request; it is not sent again: read the reason " +
			"(a 404 for every chunk: check BATCHHOOK_API_BASE_URL), then submit its CPFs again"
	case OutcomeUnknown:
		return "the provider may have accepted it: ask the provider, and resend the chunk only if it did not"
	}
	return ""
}
