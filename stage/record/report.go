package record

// Report is an agent's closing STAGE REPORT (W2).
type Report struct {
	Done     string `json:"done"`
	Files    string `json:"files"`
	Notes    string `json:"notes"`
	Blockers string `json:"blockers"`
}
