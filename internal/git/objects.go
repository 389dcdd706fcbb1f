package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/par"
)

// TreeEntry is one file of a tree flume writes: state trees hold only
// regular files at the top level.
type TreeEntry = ondisk.TreeFile

// WriteBlob stores data as a blob and returns its id.
func (repo *Repo) WriteBlob(ctx context.Context, data []byte) (string, error) {
	if w := repo.writes(); inProcess(w) {
		obj := ondisk.Encode("blob", data)
		if err := w.SetEncodedObjects(obj); err != nil {
			return "", fmt.Errorf("write blob: %w", err)
		}
		return obj.ID, nil
	}
	out, err := repo.write(ctx, data, nil, "hash-object", "-w", "-t", "blob", "--stdin")
	if err != nil {
		return "", fmt.Errorf("write blob: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// IndexPack takes the pack read from in into the object store: git
// hashes every object in it and checks each as fsck does.
func (repo *Repo) IndexPack(ctx context.Context, in io.Reader) error {
	_, err := repo.r.run(ctx, call{dir: repo.Dir, args: []string{"index-pack", "--stdin", "--fsck-objects"}, in: in})
	return err
}

// WriteTree stores a flat tree of regular files and returns its id.
func (repo *Repo) WriteTree(ctx context.Context, entries []TreeEntry) (string, error) {
	if w := repo.writes(); inProcess(w) {
		obj, err := ondisk.EncodeTree(entries)
		if err == nil {
			err = w.SetEncodedObjects(obj)
		}
		if err != nil {
			return "", fmt.Errorf("write tree: %w", err)
		}
		return obj.ID, nil
	}
	var in bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&in, "100644 blob %s\t%s\x00", e.ID, e.Name)
	}
	out, err := repo.write(ctx, in.Bytes(), nil, "mktree", "-z")
	if err != nil {
		return "", fmt.Errorf("write tree: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CommitSpec describes a commit to write.
type CommitSpec struct {
	Tree    string
	Parents []string
	Message string
	Author  Ident
	When    time.Time
}

// WriteCommit stores a commit and returns its id. It moves no ref.
func (repo *Repo) WriteCommit(ctx context.Context, c CommitSpec) (string, error) {
	c = c.normal()
	if w := repo.writes(); inProcess(w) {
		obj, err := ondisk.EncodeCommit(c.Tree, c.Parents, c.Author.Name, c.Author.Email, c.When, c.Message)
		if err == nil {
			err = w.SetEncodedObjects(obj)
		}
		if err != nil {
			return "", fmt.Errorf("write commit: %w", err)
		}
		return obj.ID, nil
	}
	args := []string{"commit-tree"}
	for _, p := range c.Parents {
		args = append(args, "-p", p)
	}
	args = append(args, "--end-of-options", c.Tree)
	date := c.When.Format("2006-01-02T15:04:05-0700")
	env := []string{
		"GIT_AUTHOR_NAME=" + c.Author.Name, "GIT_AUTHOR_EMAIL=" + c.Author.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + c.Author.Name, "GIT_COMMITTER_EMAIL=" + c.Author.Email, "GIT_COMMITTER_DATE=" + date,
	}
	out, err := repo.write(ctx, []byte(c.Message), env, args...)
	if err != nil {
		return "", fmt.Errorf("write commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// normal fills in the default author and the message's final newline.
func (c CommitSpec) normal() CommitSpec {
	if c.Author == (Ident{}) {
		c.Author = DefaultIdent
	}
	if !strings.HasSuffix(c.Message, "\n") {
		c.Message += "\n"
	}
	return c
}

// IsObjectID reports whether s is a full SHA-1 or SHA-256 object id in
// git's lowercase hex: what a record, a remote or a file may name.
func IsObjectID(s string) bool { return ondisk.IsObjectID(s) }

// WriteState stores a state: file as the one file of a tree, and a commit
// of that tree (c.Tree is set here); it returns the commit's id and moves
// no ref. In process the three objects' ids are known from their content
// before any is written, so the three files are written side by side: a
// new file took one to two milliseconds on the file systems measured, and
// a record's three were most of a promotion's step. Objects of
// a write that fails part-way are unreachable, for gc.
func (repo *Repo) WriteState(ctx context.Context, file string, data []byte, c CommitSpec) (string, error) {
	w := repo.writes()
	if !inProcess(w) {
		blob, err := repo.WriteBlob(ctx, data)
		if err != nil {
			return "", err
		}
		if c.Tree, err = repo.WriteTree(ctx, []TreeEntry{{Name: file, ID: blob}}); err != nil {
			return "", err
		}
		return repo.WriteCommit(ctx, c)
	}
	blob := ondisk.Encode("blob", data)
	tree, err := ondisk.EncodeTree([]TreeEntry{{Name: file, ID: blob.ID}})
	if err != nil {
		return "", fmt.Errorf("write tree: %w", err)
	}
	c = c.normal()
	c.Tree = tree.ID
	commit, err := ondisk.EncodeCommit(c.Tree, c.Parents, c.Author.Name, c.Author.Email, c.When, c.Message)
	if err != nil {
		return "", fmt.Errorf("write commit: %w", err)
	}
	if err := w.SetEncodedObjects(blob, tree, commit); err != nil {
		return "", fmt.Errorf("write state: %w", err)
	}
	return commit.ID, nil
}

// Object is one object read: its id, type and content.
type Object = ondisk.Object

// Batch reads objects through one long-lived `git cat-file --batch`, so that
// any number of reads costs one process (SPEC R4). It is not safe for
// concurrent use.
type Batch struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	args   []string
}

// OpenBatch starts a batch reader. Close it when done.
func (repo *Repo) OpenBatch(ctx context.Context) (*Batch, error) {
	b := &Batch{args: []string{"cat-file", "--batch"}}
	b.cmd = exec.CommandContext(ctx, repo.r.program(), b.args...)
	b.cmd.Dir = repo.Dir
	b.cmd.Env = repo.r.env(true)
	b.cmd.Stderr = &b.stderr
	var err error
	if b.in, err = b.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	b.out = bufio.NewReaderSize(stdout, 64<<10)
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return b, nil
}

// Read returns the object named by spec (an id, a ref, or "<rev>:<path>").
// A spec that names nothing returns an error wrapping ErrNotExist.
func (b *Batch) Read(spec string) (Object, error) {
	if strings.ContainsAny(spec, "\n") {
		return Object{}, fmt.Errorf("read %q: newline in object name", spec)
	}
	if _, err := io.WriteString(b.in, spec+"\n"); err != nil {
		return Object{}, b.fail(spec, err)
	}
	return b.readAnswer(spec)
}

// readAnswer reads cat-file's answer to one request.
func (b *Batch) readAnswer(spec string) (Object, error) {
	header, err := b.out.ReadString('\n')
	if err != nil {
		return Object{}, b.fail(spec, err)
	}
	header = strings.TrimSuffix(header, "\n")
	if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
		return Object{}, fmt.Errorf("read %q: %w", spec, ErrNotExist)
	}
	fields := strings.Fields(header)
	if len(fields) != 3 {
		return Object{}, fmt.Errorf("read %q: unexpected cat-file header %q", spec, header)
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil {
		return Object{}, fmt.Errorf("read %q: unexpected cat-file header %q", spec, header)
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(b.out, data); err != nil {
		return Object{}, b.fail(spec, err)
	}
	return Object{ID: fields[0], Type: fields[1], Data: data[:size]}, nil
}

func (b *Batch) fail(spec string, err error) error {
	return fmt.Errorf("read %q: %w", spec, &Error{Args: b.args, Code: -1, Stderr: tail(b.stderr.Bytes(), stderrLimit), Err: err})
}

// Close ends the batch process.
func (b *Batch) Close() error {
	b.in.Close()
	err := b.cmd.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return wrapExit(b.args, err, b.stderr.Bytes())
	}
	return nil
}

// RefFile is what ReadRefFile found: the object a ref points at and, when
// that is a commit whose tree has the file, the file's content.
type RefFile struct {
	ID   string // the object the ref points at
	Type string // its type: "commit" for a state ref
	// Found reports whether the commit's tree has the file.
	Found bool
	// IsFile reports whether what the tree holds under the name is a file.
	IsFile bool
	Data   []byte
}

// ReadRefFile reads one top-level file of the commit a ref points at, as of
// one reading of the ref. It returns an error wrapping ErrNotExist when the
// ref does not exist.
//
// It reads in process where it safely can (loose and packed refs are
// replaced by rename, so a read never sees a torn value) and falls back to
// one `git cat-file --batch` otherwise: reftable repositories, SHA-256, an
// absent ref, or any in-process failure.
func (repo *Repo) ReadRefFile(ctx context.Context, ref, file string) (RefFile, error) {
	if rf, ok, err := repo.readRefFileInProcess(ref, file); ok {
		return rf, err
	}
	b, err := repo.OpenBatch(ctx)
	if err != nil {
		return RefFile{}, err
	}
	defer func() { _ = b.Close() }() // a batch that only read
	return b.ReadFileAt(ref, file)
}

// ReadMany reads many objects in one pipelined exchange: the requests are
// written while the answers are read, so the cost is one pass through the
// pipe, not a round trip per object. An object that does not exist gets a
// nil Data and an empty Type.
func (b *Batch) ReadMany(specs []string) ([]Object, error) {
	for _, spec := range specs {
		if strings.ContainsAny(spec, "\n") {
			return nil, fmt.Errorf("read %q: newline in object name", spec)
		}
	}
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(b.in)
		for _, spec := range specs {
			if _, err := w.WriteString(spec + "\n"); err != nil {
				werr <- err
				return
			}
		}
		werr <- w.Flush()
	}()
	objs := make([]Object, len(specs))
	for i, spec := range specs {
		obj, err := b.readAnswer(spec)
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		objs[i] = obj
	}
	if err := <-werr; err != nil {
		return nil, b.fail("", err)
	}
	return objs, nil
}

// FilesAt reads the top-level file of each commit, as ReadMany reads
// "<commit>:<file>": in process where that is safe, else in one pipelined
// `git cat-file --batch`.
func (repo *Repo) FilesAt(ctx context.Context, commits []string, file string) ([]Object, error) {
	if objs, ok := repo.reads().FilesAt(commits, file); ok {
		return objs, nil
	}
	b, err := repo.OpenBatch(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = b.Close() }() // a batch that only read
	specs := make([]string, len(commits))
	for i, id := range commits {
		specs[i] = id + ":" + file
	}
	return b.ReadMany(specs)
}

// ReadFileAt reads one top-level file of the commit rev names, as
// ReadRefFile does, through the batch.
func (b *Batch) ReadFileAt(rev, file string) (RefFile, error) {
	obj, err := b.Read(rev)
	if err != nil {
		return RefFile{}, err
	}
	rf := RefFile{ID: obj.ID, Type: obj.Type}
	if obj.Type != "commit" {
		return rf, nil
	}
	blob, err := b.Read(obj.ID + ":" + file)
	if errors.Is(err, ErrNotExist) {
		return rf, nil
	}
	if err != nil {
		return RefFile{}, err
	}
	rf.Found, rf.IsFile, rf.Data = true, blob.Type == "blob", blob.Data
	return rf, nil
}

func (repo *Repo) readRefFileInProcess(ref, file string) (RefFile, bool, error) {
	id, ok := repo.refValue(ref)
	switch {
	case !ok:
		return RefFile{}, false, nil
	case id == "":
		// Neither a loose ref nor a packed one: no git needed to say so.
		return RefFile{}, true, fmt.Errorf("%s: %w", ref, ErrNotExist)
	}
	rf, ok := repo.fileOf(id, file)
	return rf, ok, nil
}

// fileOf reads file at object id as ReadRefFile does, in process; false
// when git must answer.
func (repo *Repo) fileOf(id, file string) (RefFile, bool) {
	typ, _, err := repo.reads().EncodedObject(id, true)
	if err != nil {
		return RefFile{}, false
	}
	rf := RefFile{ID: id, Type: typ}
	if typ != "commit" {
		return rf, true
	}
	var obj Object
	if !repo.reads().FileAt(id, file, &obj) {
		return RefFile{}, false
	}
	rf.Found, rf.IsFile, rf.Data = obj.Type != "", obj.Type == "blob", obj.Data
	return rf, true
}

// FilesOf reads file at each object of ids as ReadRefFile reads it at a
// ref: the object's type, and the file where it is a commit. Side by side
// in process where that is safe, else through one `git cat-file --batch`.
func (repo *Repo) FilesOf(ctx context.Context, ids []string, file string) ([]RefFile, error) {
	out := make([]RefFile, len(ids))
	if par.Each(len(ids), func(i int) bool {
		var ok bool
		out[i], ok = repo.fileOf(ids[i], file)
		return ok
	}) {
		return out, nil
	}
	b, err := repo.OpenBatch(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = b.Close() }() // a batch that only read
	for i, id := range ids {
		if out[i], err = b.ReadFileAt(id, file); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RefValue returns the object a ref points at, or "" when it does not
// exist: through its storer where it can (see storer), else with git.
func (repo *Repo) RefValue(ctx context.Context, name string) (string, error) {
	if id, ok := repo.refValue(name); ok {
		return id, nil
	}
	id, err := repo.ResolveRef(ctx, name)
	if errors.Is(err, ErrNotExist) {
		return "", nil
	}
	return id, err
}

// TreeOf returns the tree of a commit: in process where that is safe,
// else with git.
func (repo *Repo) TreeOf(ctx context.Context, commit string) (string, error) {
	if tree, ok := repo.reads().CommitTree(commit); ok {
		return tree, nil
	}
	return repo.ResolveRef(ctx, commit+"^{tree}")
}

// BlobAt returns the id of the file at path in commit's tree, "" when the
// tree has no file there: in process where that is safe, else with git.
func (repo *Repo) BlobAt(ctx context.Context, commit, path string) (string, error) {
	if id, ok := repo.reads().BlobAt(commit, path); ok {
		return id, nil
	}
	id, err := repo.ResolveRef(ctx, commit+":"+path)
	if errors.Is(err, ErrNotExist) {
		return "", nil
	}
	return id, err
}

// BranchCommit returns the commit a branch (a full ref name) points at, or
// an error wrapping ErrNotExist: in process where that is safe, else with
// git.
func (repo *Repo) BranchCommit(ctx context.Context, ref string) (string, error) {
	id, err := repo.RefValue(ctx, ref)
	switch {
	case err != nil:
		return "", err
	case id == "":
		return "", fmt.Errorf("resolve %q: %w", ref, ErrNotExist)
	}
	if typ, _, err := repo.reads().EncodedObject(id, true); err == nil && typ == "commit" {
		return id, nil
	}
	return repo.ResolveCommit(ctx, ref)
}
