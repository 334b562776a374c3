package session

// The session's parts by concern, as the engine is split into its
// toolkit's parts: each is the one Session (its connection, streams and
// state namespace) seen through the methods of its concern, so no type
// carries every verb of the plugin.
type (
	// Jobs hand runs to in-cluster Jobs and follow their submissions.
	Jobs struct{ *Session }
	// Controls are the commands on a recorded run once the lifecycle
	// takes them: cancel, complete, a live rollback's request, abort.
	Controls struct{ *Session }
	// Reports keep and read the runs' reports and the pace measured.
	Reports struct{ *Session }
	// Clouds detect and open a group's cloud, and ask it what planning
	// must know of its machines.
	Clouds struct{ *Session }
)

// Jobs is the session's part that runs in-cluster Jobs.
func (s *Session) Jobs() Jobs { return Jobs{s} }

// Controls is the session's part that steers recorded runs.
func (s *Session) Controls() Controls { return Controls{s} }

// Reports is the session's part that keeps and reads reports.
func (s *Session) Reports() Reports { return Reports{s} }

// Clouds is the session's part that opens the clouds.
func (s *Session) Clouds() Clouds { return Clouds{s} }
