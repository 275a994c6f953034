package kafkasink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/batchhook/batchhook/sink"
)

func pw(s string) func() []byte { return func() []byte { return []byte(s) } }

// SASL against a broker with ACLs: a SCRAM superuser delivers; a PLAIN
// user allowed its transactional id but not the topic is refused for good
// (authorization); a wrong password is retried (an operator fixes it and
// the pending deliveries go out).
func TestSASLAndAuthorization(t *testing.T) {
	c := newCluster(t, 1, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-pw"),
		kfake.Superuser("SCRAM-SHA-512", "admin512", "admin512-pw"),
		kfake.User("PLAIN", "bob", "bob-pw",
			kfake.ACL{Resource: kmsg.ACLResourceTypeTransactionalId, Name: "txn-bob", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true},
			kfake.ACL{Resource: kmsg.ACLResourceTypeTransactionalId, Name: "txn-bob", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true},
		))
	brokers := c.ListenAddrs()

	for _, m := range []struct{ mech, user, pass string }{{SASLScramSHA256, "admin", "admin-pw"}, {SASLScramSHA512, "admin512", "admin512-pw"}} {
		s := newTestSink(t, brokers, Options{SASLMechanism: m.mech, SASLUser: m.user, SASLPassword: pw(m.pass), TransactionalID: "txn-" + m.user})
		e, lines := testExport(t, "b-"+m.user, 4)
		if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
			t.Fatalf("%s: %v %s %s", m.mech, r.Outcome, r.Kind, r.Reason)
		}
		rs := consume(t, brokers, kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, e.BatchID) == 1 },
			kgo.SASL(mustMech(t, m.mech, m.user, m.pass)))
		checkBatch(t, rs, e, lines)
	}

	bob := newTestSink(t, brokers, Options{SASLMechanism: SASLPlain, SASLUser: "bob", SASLPassword: pw("bob-pw"), TransactionalID: "txn-bob"})
	e, _ := testExport(t, "b-bob", 2)
	if r := bob.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Failed || r.Kind != "authorization" {
		t.Fatalf("topic not allowed: %v %s %s, want failed authorization", r.Outcome, r.Kind, r.Reason)
	}

	wrong := newTestSink(t, brokers, Options{SASLMechanism: SASLScramSHA256, SASLUser: "admin", SASLPassword: pw("not-the-password"),
		TransactionalID: "txn-wrong", Timeout: 3 * time.Second})
	r := wrong.Deliver(context.Background(), e, nopProgress{})
	if r.Outcome != sink.Retry {
		t.Fatalf("wrong password: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
	for _, secret := range []string{"not-the-password", "admin-pw", "bob-pw"} {
		if strings.Contains(r.Reason, secret) {
			t.Fatalf("the reason quotes a password: %s", r.Reason)
		}
	}
}

func mustMech(t *testing.T, mech, user, pass string) sasl.Mechanism {
	t.Helper()
	m, err := saslMechanism(Options{SASLMechanism: mech, SASLUser: user, SASLPassword: pw(pass)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
