package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/batchhook/batchhook/admin"
	"github.com/batchhook/batchhook/internal/signature"
)

const rejectedUsage = `Usage:
  batchhook rejected list [--json] [--admin URL]
  batchhook rejected show ID [--json] [--admin URL]

The last BATCHHOOK_REJECTED_KEEP deliveries refused with 401 (both
webhooks), newest first: when, where, the signature header as sent and why
it failed. show prints the kept body (its first 8 KiB) of a batch delivery;
a payments body is withheld (it may hold personal data). To check one
against a secret file: batchhook verify --rejected ID --secret-file F.
Same environment as "batchhook batches".
`

func rejectedCmd(ctx context.Context, args []string, e Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	sub, code, ok := subcommand(args, rejectedUsage, e)
	if !ok {
		return code
	}
	fs := newFlags("rejected "+sub, rejectedUsage, stderr)
	asJSON, client := adminFlags(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	var path string
	switch {
	case sub == "list" && len(pos) == 0:
		path = "/admin/rejected"
	case sub == "show" && len(pos) == 1:
		path = "/admin/rejected/" + url.PathEscape(pos[0])
	default:
		fmt.Fprintf(stderr, "batchhook rejected: bad arguments\n%s", rejectedUsage)
		return 2
	}
	raw, code, done := getReply(ctx, "rejected "+sub, client, path, "", *asJSON, stdout, stderr)
	if done {
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	if sub == "show" {
		var e admin.RejectedView
		if err := json.Unmarshal(raw, &e); err != nil {
			return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
		}
		fmt.Fprintf(tw, "id:\t%d\nreceived:\t%s\npath:\t%s\nproduct:\t%s\nreason:\t%s\nsignature:\t%q\nremote:\t%s\nbody:\t%d bytes, sha256 %s\n",
			e.ID, e.ReceivedAt.UTC().Format(time.RFC3339), e.Path, e.Product, e.Reason, e.Signature, e.RemoteAddr, e.BodyLen, e.BodySHA256)
		tw.Flush()
		switch {
		case e.ErasedBy != "":
			fmt.Fprintf(stdout, "(body erased by %s)\n", e.ErasedBy)
		case e.BodyWithheld:
			fmt.Fprintln(stdout, "(payments body not shown: it may hold personal data)")
		default:
			if e.Truncated {
				fmt.Fprintf(stdout, "(first %d bytes kept)\n", len(e.Body))
			}
			if e.Masked {
				fmt.Fprintln(stdout, "(CPF-shaped digits masked with *)")
			}
			fmt.Fprintf(stdout, "%s\n", e.Body)
		}
		return 0
	}
	var page struct {
		Items []admin.RejectedView `json:"items"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return exitOf(fmt.Errorf("decode reply: %w", err), stderr)
	}
	fmt.Fprintln(tw, "ID\tRECEIVED\tPRODUCT\tREASON\tBODY\tREMOTE")
	for _, e := range page.Items {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", e.ID, e.ReceivedAt.UTC().Format(time.RFC3339), e.Product, e.Reason, e.BodyLen, e.RemoteAddr)
	}
	tw.Flush()
	return 0
}

// verifyRejected is `batchhook verify --rejected ID`: it fetches the kept
// body and signature through the admin API and gives verify's explanation
// for them under secret. Without the whole body (over 8 KiB, a withheld
// payments body, an erased one) only the header's form can be judged.
func verifyRejected(id string, secret []byte, adminURL string, stdout, stderr io.Writer) int {
	c, err := newAdminClient(adminURL)
	if err != nil {
		fmt.Fprintf(stderr, "batchhook verify: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := c.do(ctx, http.MethodGet, "/admin/rejected/"+url.PathEscape(id))
	if err != nil {
		fmt.Fprintf(stderr, "batchhook verify --rejected %s: %v\n", id, explain(err))
		return 1
	}
	var e admin.RejectedView
	if err := json.Unmarshal(raw, &e); err != nil {
		fmt.Fprintf(stderr, "batchhook verify: decode reply: %v\n", err)
		return 1
	}
	whole := !e.Truncated && !e.BodyWithheld && e.ErasedBy == "" && !e.Masked && len(e.Body) == e.BodyLen
	reason := signature.Verify(secret, e.Body, e.Signature)
	switch {
	case reason == signature.OK && whole:
		fmt.Fprintf(stdout, "valid: delivery %d is signed with this secret (it was rejected as %s: the daemon had another secret then)\n", e.ID, e.Reason)
		return 0
	case reason == signature.Mismatch && !whole:
		fmt.Fprintf(stdout, "undecided: the header has the right form, but the whole body is not available (%s); the daemon found: %s (%s)\n",
			missingBody(e), signature.Reason(e.Reason).Explain(), e.Reason)
		return 1
	case reason == signature.OK:
		fmt.Fprintf(stdout, "undecided: the kept part of the body matches, but it is not the whole body (%s)\n", missingBody(e))
		return 1
	}
	fmt.Fprintf(stdout, "invalid: %s (%s)\n", reason.Explain(), reason)
	return 1
}

func missingBody(e admin.RejectedView) string {
	switch {
	case e.ErasedBy != "":
		return "erased by " + e.ErasedBy
	case e.BodyWithheld:
		return "a payments body is not served: it may hold personal data"
	case e.Masked:
		return "its CPF-shaped digits were masked when it was kept, so these are not the bytes that came"
	default:
		return fmt.Sprintf("only the first %d of %d bytes were kept", len(e.Body), e.BodyLen)
	}
}
