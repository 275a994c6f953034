package lookupsim

import (
	"testing"
	"time"
)

// The document fixes these (sections 6 and 8); the simulator must match.
func TestDefaultsFollowTheDocument(t *testing.T) {
	for name, c := range map[string]struct{ got, want any }{
		"DeliveryTimeout (section 6: 10 seconds)":  {DefaultDeliveryTimeout, 10 * time.Second},
		"Retention (section 8: 7 days)":            {DefaultRetention, 7 * 24 * time.Hour},
		"SubmitPerMinute (section 8: 10 a minute)": {DefaultSubmitPerMinute, 10},
		"MaxInFlight (section 8: 50)":              {DefaultMaxInFlight, 50},
		"MaxCPFs (section 8: 1,000)":               {MaxCPFs, 1000},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", name, c.got, c.want)
		}
	}
}
