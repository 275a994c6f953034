package cpf

import "testing"

// TestScrubKeepsUUIDs: a transaction id whose hex groups hold a CPF-shaped
// run ("03-837033977") is printed whole, while a CPF beside it, a UUID
// glued into a longer digit run, or one with eleven digits in a row, is
// still masked.
func TestScrubKeepsUUIDs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"279c7f54-d32c-4aae-aa03-837033977a3c", "279c7f54-d32c-4aae-aa03-837033977a3c"},
		{"transaction_id: 279c7f54-d32c-4aae-aa03-837033977a3c", "transaction_id: 279c7f54-d32c-4aae-aa03-837033977a3c"},
		{"12345678-1234-1234-1234-123456abc012", "12345678-1234-1234-1234-123456abc012"},
		// Eleven digits in a row are a whole CPF: not a UUID to keep.
		{"12345678-1234-1234-1234-123456789012", "********-****-****-****-************"},
		{"279c7f54-d32c-4aae-aa03-a52998224725", "279c7f54-d32c-4aae-aa03-a***********"},
		{"cpf 529.982.247-25 in 279C7F54-D32C-4AAE-AA03-837033977A3C, cpf 52998224725",
			"cpf ***.***.***-** in 279C7F54-D32C-4AAE-AA03-837033977A3C, cpf ***********"},
		{"52998224725.279c7f54-d32c-4aae-aa03-837033977a3c", "***********.279c7f54-d32c-4aae-aa03-837033977a3c"},
		// Not a UUID: more digits glued to it.
		{"529982247-279c7f54-d32c-4aae-aa03-837033977a3c", "*********-***c7f54-d32c-4aae-aa**-*********a3c"},
	} {
		if got := Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
