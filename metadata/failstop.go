package metadata

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// ErrLogStoreFailed: a write to the Raft log or stable store failed (a
// full disk, an I/O error). Every later write fails with it too, and the
// node must stop: Store.Failed says so.
var ErrLogStoreFailed = errors.New("metadata: the Raft log store failed a write")

// failStopStore is raft's log and stable store over raft.db that stops
// writing after the first failed write. After a failed commit bbolt's
// in-memory state no longer matches the file, and writing on (as raft
// does, re-electing itself and appending again) has been seen to lose a
// commit made later: a topic created and acknowledged once the disk had
// room again was missing after a restart. So, as Kafka stops a node whose
// metadata log dir fails, the first failure is final: the Store reports
// it, the node stops, and a restart reads raft.db as its last successful
// commit left it.
type failStopStore struct {
	log    raft.LogStore
	stable raft.StableStore

	once   sync.Once
	failed chan struct{} // closed at the first failure
	mu     sync.Mutex
	err    error
}

func newFailStopStore(log raft.LogStore, stable raft.StableStore) *failStopStore {
	return &failStopStore{log: log, stable: stable, failed: make(chan struct{})}
}

// check turns a write's error into the lasting failure.
func (s *failStopStore) check(op string, err error) error {
	if err == nil {
		return nil
	}
	s.once.Do(func() {
		s.mu.Lock()
		s.err = fmt.Errorf("%w: %s: %v", ErrLogStoreFailed, op, err)
		s.mu.Unlock()
		close(s.failed)
	})
	return s.Err()
}

// Err is the failure, or nil.
func (s *failStopStore) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// refuse is the lasting failure once there is one.
func (s *failStopStore) refuse() error {
	select {
	case <-s.failed:
		return s.Err()
	default:
		return nil
	}
}

func (s *failStopStore) FirstIndex() (uint64, error)            { return s.log.FirstIndex() }
func (s *failStopStore) LastIndex() (uint64, error)             { return s.log.LastIndex() }
func (s *failStopStore) GetLog(index uint64, l *raft.Log) error { return s.log.GetLog(index, l) }

func (s *failStopStore) StoreLog(l *raft.Log) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.check("store log", s.log.StoreLog(l))
}

func (s *failStopStore) StoreLogs(ls []*raft.Log) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.check("store logs", s.log.StoreLogs(ls))
}

func (s *failStopStore) DeleteRange(min, max uint64) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.check("delete logs", s.log.DeleteRange(min, max))
}

func (s *failStopStore) Set(key, val []byte) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.check("set", s.stable.Set(key, val))
}

func (s *failStopStore) Get(key []byte) ([]byte, error) { return s.stable.Get(key) }

func (s *failStopStore) SetUint64(key []byte, val uint64) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.check("set", s.stable.SetUint64(key, val))
}

func (s *failStopStore) GetUint64(key []byte) (uint64, error) { return s.stable.GetUint64(key) }

// Failed is closed when a write to the Raft log store failed: the node
// must stop (FailedErr says why). Kafka stops a node whose metadata log
// directory fails.
func (s *Store) Failed() <-chan struct{} { return s.logs.failed }

// FailedErr is the failure Failed announced, or nil.
func (s *Store) FailedErr() error { return s.logs.Err() }
