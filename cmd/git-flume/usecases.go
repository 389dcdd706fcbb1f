package main

import (
	"context"

	"github.com/git-flume/git-flume/land"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/delegation"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/urfave/cli/v2"
)

// The use cases' handlers, each over the repository a command opens once
// (stage.Repository) from the directory it names.

// operatorArg are the operator's verbs in the repository of the verb's
// --repo, and its one PLACE with the options every verb on a place takes.
func (a *app) operatorArg(c *cli.Context) (*engine.Operator, stage.PlaceOptions, error) {
	po, err := a.placeArg(c)
	if err != nil {
		return nil, po, err
	}
	op, err := a.operator(c.Context, po.Repo)
	return op, po, err
}

// places are the places' use cases in the repository containing repoDir.
func (a *app) places(ctx context.Context, repoDir string) (*place.Places, error) {
	r, err := a.stageEnv().OpenRepository(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return place.New(r), nil
}

// operator is the operator's verbs in the repository containing
// repoDir, opened once for the command.
func (a *app) operator(ctx context.Context, repoDir string) (*engine.Operator, error) {
	r, err := a.stageEnv().OpenRepository(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return engine.NewOperator(r), nil
}

// delegationVerbs are the commissioner's verbs in the repository
// containing repoDir, opened once for the command.
func (a *app) delegationVerbs(ctx context.Context, repoDir string) (*delegation.Verbs, error) {
	r, err := a.stageEnv().OpenRepository(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return delegation.New(r), nil
}

// lander is the lander in the repository of the verb's --repo.
func (a *app) lander(c *cli.Context) (*land.Lander, error) {
	r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
	if err != nil {
		return nil, err
	}
	return land.New(r), nil
}

// placeRepo is a verb's one PLACE and the repository of its --repo,
// opened once.
func (a *app) placeRepo(c *cli.Context) (string, *stage.Repository, error) {
	id, err := onePlace(c)
	if err != nil {
		return "", nil, err
	}
	r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
	return id, r, err
}
