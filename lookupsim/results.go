package lookupsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// The statuses a batch can have. Processing is ours (docs/provider-api.md does not
// name the in-flight state); the other four are those of docs/provider-api.md §3.1.
const (
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusPartial    = "partial"
	StatusExpired    = "expired"
	StatusFailed     = "failed"
)

// IsFinalStatus reports whether s is one of the four final statuses, so
// callers (the command's -outcomes flag) can check theirs before Cycle.
func IsFinalStatus(s string) bool {
	switch s {
	case StatusCompleted, StatusPartial, StatusExpired, StatusFailed:
		return true
	}
	return false
}

// The per-item results.
const (
	resultFound      = "found"
	resultNotFound   = "not_found"
	resultIncomplete = "incomplete"
	resultPending    = "pending"
)

type profile struct {
	Name      string `json:"name"`
	BirthDate string `json:"birth_date"`
	Situation string `json:"situation,omitempty"`
}

type item struct {
	CPF     string   `json:"cpf"`
	Result  string   `json:"result"`
	Profile *profile `json:"profile,omitempty"`
}

// Names carry non-ASCII letters on purpose: exports are compared byte for
// byte, and a client that re-encodes text would be caught.
var (
	firstNames = [...]string{"João", "Maria", "José", "Ana", "Antônio", "Francisca", "Luís", "Conceição",
		"Sebastião", "Lúcia", "Márcio", "Fábio", "Letícia", "Júlia", "André", "Cauã"}
	surnames = [...]string{"Silva", "Santos", "Oliveira", "Souza", "Araújo", "Conceição", "Gonçalves", "Simões",
		"Lima", "Magalhães", "Pereira", "Assunção", "Brandão", "Ferreira", "Falcão", "Guimarães"}
	situations = [...]string{"suspensa", "pendente_de_regularizacao", "titular_falecido", "cancelada", "nula"}
	birthEpoch = time.Date(1940, 1, 1, 0, 0, 0, 0, time.UTC)
)

// birthDays is the span of birth dates handed out: 1940-01-01 to 2007-12-31.
const birthDays = 24837

// cpfHash is the one source of every per-CPF decision, so the same CPF
// gives the same answer in every batch and every run.
func cpfHash(cpf string) [32]byte {
	return sha256.Sum256([]byte("lookupsim/v1\x00" + cpf))
}

// foundInBase says whether the service's base knows a well-formed CPF
// (about 3 in 4 do).
func foundInBase(h [32]byte) bool { return h[0] < 192 }

func profileOf(h [32]byte) *profile {
	first := firstNames[int(h[3])%len(firstNames)]
	middle := surnames[int(h[4])%len(surnames)]
	last := surnames[int(h[5])%len(surnames)]
	if last == middle {
		last = surnames[(int(h[5])+1)%len(surnames)]
	}
	days := int(binary.BigEndian.Uint32(h[6:10]) % birthDays)
	situation := "regular"
	if h[10] >= 230 {
		situation = situations[int(h[11])%len(situations)]
	}
	return &profile{
		Name:      first + " " + middle + " " + last,
		BirthDate: birthEpoch.AddDate(0, 0, days).Format(time.DateOnly),
		Situation: situation,
	}
}

// counters are the webhook's totals (docs/provider-api.md §2.1).
type counters struct {
	requested, found, notFound int
}

// buildItems renders every item of a batch closing with status, in
// submission order, as compact JSON, with its counters. A failed batch
// has no items. A partial batch has at least one incomplete item and an
// expired batch at least one pending item, so each status shows its kind.
func buildItems(cpfs []string, status string) ([]json.RawMessage, counters, error) {
	c := counters{requested: len(cpfs)}
	if status == StatusFailed {
		return []json.RawMessage{}, c, nil
	}
	items := make([]item, len(cpfs))
	marked := false
	for i, cpf := range cpfs {
		h := cpfHash(cpf)
		it := item{CPF: cpf, Result: resultNotFound}
		if wellFormedCPF(cpf) && foundInBase(h) {
			it.Result, it.Profile = resultFound, profileOf(h)
		}
		switch {
		case status == StatusPartial && it.Result == resultFound && h[12]%4 == 0:
			it.Result, it.Profile.Situation = resultIncomplete, ""
			marked = true
		case status == StatusExpired && h[13]%4 == 0:
			it.Result, it.Profile = resultPending, nil
			marked = true
		}
		items[i] = it
	}
	if !marked && len(items) > 0 {
		switch status {
		case StatusPartial:
			k := 0
			for i := range items {
				if items[i].Result == resultFound {
					k = i
					break
				}
			}
			p := profileOf(cpfHash(items[k].CPF))
			p.Situation = ""
			items[k].Result, items[k].Profile = resultIncomplete, p
		case StatusExpired:
			items[0].Result, items[0].Profile = resultPending, nil
		}
	}
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		switch it.Result {
		case resultFound, resultIncomplete:
			c.found++
		case resultNotFound:
			c.notFound++
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, c, fmt.Errorf("encode item %d: %w", i, err)
		}
		out[i] = b
	}
	return out, c, nil
}
