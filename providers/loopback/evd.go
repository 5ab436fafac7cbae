package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
)

// evd is an Event Dispatcher: the kit's whole EVD (dispatch.EVDs), since
// every loopback event is posted by the provider's own code as it happens.
// The hot calls (Dequeue, Wait, PostSE) take only the queue's lock.
type evd = dispatch.EVDObject

// CreateEVD creates an EVD of qlen events accepting the streams in flags,
// feeding cno if it is not nil (dat_evd_create in libdat(3LIB)).
func (i *ia) CreateEVD(qlen int, cnoArg api.CNO, flags api.EVDFlags) (api.EVD, error) {
	return i.evds.Create(qlen, cnoArg, flags)
}

// CreateCNO creates a CNO with wait agent agent, nil for none
// (dat_cno_create(3DAT)); see dispatch.CNOObject.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) { return i.cnos.Create(agent) }

// CreateCNOFD creates a CNO that owns a file descriptor, readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0); see
// dispatch.NewCNOObject.
func (i *ia) CreateCNOFD() (api.CNO, int, error) { return i.cnos.CreateFD() }
