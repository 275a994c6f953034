package kafkasink

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/batchhook/batchhook/sink"
)

// testCA makes a CA and a certificate for 127.0.0.1 signed by it; it
// returns the server's TLS config and the CA's PEM file.
func testCA(t *testing.T) (*tls.Config, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "batchhook test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, caFile
}

// TLS: with the broker's CA the batch is delivered; with the system roots
// (which do not know the test CA) the handshake fails and the delivery is
// retried, never sent in clear.
func TestTLSVerifiesTheBroker(t *testing.T) {
	server, caFile := testCA(t)
	c := newCluster(t, 1, kfake.TLS(server))
	s := newTestSink(t, c.ListenAddrs(), Options{TLS: true, CAFile: caFile})
	e, lines := testExport(t, "b-tls", 6)
	if r := s.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Delivered {
		t.Fatalf("TLS with the CA: %v %s %s", r.Outcome, r.Kind, r.Reason)
	}
	pool := x509.NewCertPool()
	pemBytes, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(pemBytes)
	rs := consume(t, c.ListenAddrs(), kgo.ReadCommitted(), 10*time.Second, func(rs []*kgo.Record) bool { return manifests(rs, "b-tls") == 1 },
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	checkBatch(t, rs, e, lines)

	untrusted := newTestSink(t, c.ListenAddrs(), Options{TLS: true, TransactionalID: "txn-untrusted", Timeout: 2 * time.Second})
	if r := untrusted.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Retry {
		t.Fatalf("TLS with the system roots against a private CA: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
	plain := newTestSink(t, c.ListenAddrs(), Options{TransactionalID: "txn-plain", Timeout: 2 * time.Second})
	if r := plain.Deliver(context.Background(), e, nopProgress{}); r.Outcome != sink.Retry {
		t.Fatalf("no TLS against a TLS broker: %v %s %s, want retry", r.Outcome, r.Kind, r.Reason)
	}
}
