package kafkasink

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Check asks the brokers for their API versions with a client of its own
// (the sink's transactional producer is left untouched) and returns nil
// when one answers before ctx ends. The daemon calls it at start to warn
// of brokers it cannot reach; a failure never stops the start
// (DECISIONS 30), since deliveries wait and retry.
func (s *Sink) Check(ctx context.Context) error {
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return fmt.Errorf("make kafka client: %w", err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("reach the kafka brokers: %w", err)
	}
	return nil
}
