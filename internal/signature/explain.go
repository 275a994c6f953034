package signature

// explanations say what each Reason means for the sender, in the words
// `batchhook verify` prints and the webhook_rejected log line carries.
var explanations = map[Reason]string{
	Missing:      "no signature given",
	Prefixed:     `the value has a "sha256=" prefix; the header holds the Base64 value alone`,
	RawDigest:    "44 characters: the raw 32-byte digest was Base64-encoded; the scheme encodes its 64-character lowercase hex text (88 characters)",
	WrongLength:  "wrong length: a valid value has 88 characters",
	NotBase64:    "not standard padded Base64",
	UppercaseHex: "the hex digest was uppercase before Base64; the scheme uses lowercase",
	Mismatch:     "does not match this body and secret (other secret, or the body changed: spacing and key order count)",
}

// Explain says what r means, for an operator; "" for OK.
func (r Reason) Explain() string { return explanations[r] }
