package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// mongoStore keeps the API's data in MongoDB (or a server that speaks its
// protocol, such as FerretDB): collections users, sessions (keyed by token),
// items and counters, which hands out the integer ids the API uses. Times
// are kept as microseconds since the epoch, not BSON dates (milliseconds),
// so an item reads back as it was written; the payload is kept as a string,
// byte for byte.
type mongoStore struct {
	client                           *mongo.Client
	users, sessions, items, counters *mongo.Collection
	idMu                             sync.Mutex // one reservation at a time in this process (see nextIDs)
}

var _ store = (*mongoStore)(nil)

// isMongoURL reports whether DATABASE_URL names a MongoDB server.
func isMongoURL(s string) bool {
	return strings.HasPrefix(s, "mongodb://") || strings.HasPrefix(s, "mongodb+srv://")
}

// mongoItem is an item as stored.
type mongoItem struct {
	ID        int64  `bson:"_id"`
	Bucket    int64  `bson:"bucket"`
	Title     string `bson:"title"`
	Owner     int64  `bson:"owner"`
	Payload   string `bson:"payload"`
	CreatedUs int64  `bson:"created_at"`
	UpdatedUs int64  `bson:"updated_at"`
}

func (m mongoItem) item() item {
	return item{ID: m.ID, Bucket: m.Bucket, Title: m.Title, Owner: m.Owner, Payload: []byte(m.Payload),
		CreatedAt: time.UnixMicro(m.CreatedUs).UTC(), UpdatedAt: time.UnixMicro(m.UpdatedUs).UTC()}
}

// mongoListIndexes are listIndexes in MongoDB's terms: with _id last, a
// backward walk of the index yields created_at DESC, _id DESC and the
// query reads limit documents.
var mongoListIndexes = []struct {
	name string
	keys bson.D
}{
	{"items_bucket_created_at_idx", bson.D{{Key: "bucket", Value: 1}, {Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}},
	{"items_created_at_idx", bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}},
}

// openMongo connects to databaseURL (its path names the database) and
// creates the indexes; indexBucket decides whether the list indexes exist
// (see listIndexes).
func openMongo(ctx context.Context, databaseURL string, indexBucket bool, log *slog.Logger) (*mongoStore, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil, fmt.Errorf("DATABASE_URL %q names no database (mongodb://host:port/NAME)", u.Redacted())
	}
	c, err := mongo.Connect(options.Client().ApplyURI(databaseURL).SetMaxPoolSize(defaultPoolConns).SetAppName("demo-target"))
	if err != nil {
		return nil, fmt.Errorf("connect to MongoDB: %w", err)
	}
	db := c.Database(name)
	s := &mongoStore{client: c, users: db.Collection("users"), sessions: db.Collection("sessions"),
		items: db.Collection("items"), counters: db.Collection("counters")}
	if err := s.migrate(ctx, indexBucket); err != nil {
		c.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("create MongoDB indexes: %w", err)
	}
	log.Info("schema ready", "store", "mongodb", "list_indexes", indexBucket)
	return s, nil
}

func (s *mongoStore) migrate(ctx context.Context, indexBucket bool) error {
	if _, err := s.users.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "username", Value: 1}}, Options: options.Index().SetName("users_username_key").SetUnique(true),
	}); err != nil {
		return err
	}
	// Creating items with an index makes the collection; listing its indexes
	// needs it to exist.
	if err := s.items.Database().CreateCollection(ctx, "items"); err != nil && !isNamespaceExists(err) {
		return err
	}
	names, err := s.items.Indexes().ListSpecifications(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n.Name] = true
	}
	for _, ix := range mongoListIndexes {
		switch {
		case indexBucket && !have[ix.name]:
			_, err = s.items.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: ix.keys, Options: options.Index().SetName(ix.name)})
		case !indexBucket && have[ix.name]:
			err = s.items.Indexes().DropOne(ctx, ix.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isNamespaceExists: the collection exists already (code 48), or a replica
// starting beside this one made it first.
func isNamespaceExists(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists")
}

func (s *mongoStore) close() { s.client.Disconnect(context.Background()) }

// idAttempts bounds how often a create takes new ids after finding the ones
// it reserved already used (see nextIDs).
const idAttempts = 20

// idSkip is how many ids attempt (1, 2, ...) passes over before the ones it
// uses: none at first, then 1, 3, 7, ... A lost update can set the counter
// back by as many ids as were handed out while it was in flight (dozens on
// a loaded FerretDB), and one id further per attempt would take as many
// attempts; doubling the jump takes their logarithm. The ids passed over
// are lost, as a sequence's are.
func idSkip(attempt int) int { return 1<<(attempt-1) - 1 }

// nextIDs reserves n consecutive ids of a counter and returns the first.
//
// Subtleness ahead: MongoDB's findAndModify is atomic, so two concurrent
// reservations never overlap. FerretDB's (1.x) is not: it reads the
// counter, applies $inc in its own process and writes the document back,
// so concurrent reservations can read the same value and hand out the same
// ids (and two first reservations of a counter can both try to create it).
// This process therefore makes one reservation at a time (idMu): with one
// target process, as the demo runs, no two overlap. Across processes they
// still can, so the creates below treat an insert that fails on a
// duplicate _id as "those ids were taken" and reserve again, further on
// each time (idSkip). (Without idMu, 16 VUs over FerretDB on PostgreSQL
// made ~4,800 duplicate-key failures in 40 s, each an ERROR line in
// FerretDB's log, and creates waited on their retries.) On mongod none of
// this happens.
func (s *mongoStore) nextIDs(ctx context.Context, counter string, n int) (int64, error) {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	var doc struct {
		Seq int64 `bson:"seq"`
	}
	for attempt := 1; ; attempt++ {
		err := s.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: counter}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "seq", Value: int64(n)}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		// Two upserts creating the counter at once: one wins, the other
		// increments the winner's (mongod retries this itself).
		if mongo.IsDuplicateKeyError(err) && attempt < idAttempts {
			continue
		}
		if err != nil {
			return 0, err
		}
		return doc.Seq - int64(n) + 1, nil
	}
}

func (s *mongoStore) createUser(ctx context.Context, username string, hash []byte, now time.Time) (int64, error) {
	for attempt := 1; ; attempt++ {
		skip := idSkip(attempt)
		id, err := s.nextIDs(ctx, "users", 1+skip)
		if err != nil {
			return 0, err
		}
		id += int64(skip)
		_, err = s.users.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "username", Value: username},
			{Key: "password_hash", Value: hash}, {Key: "created_at", Value: now.UnixMicro()}})
		if !mongo.IsDuplicateKeyError(err) {
			return id, err
		}
		// The username's unique index, or an id handed out twice (see
		// nextIDs): FerretDB's duplicate key error does not say which index.
		if _, _, err := s.userByName(ctx, username); !errors.Is(err, errNotFound) {
			if err != nil {
				return 0, err
			}
			return 0, errTaken
		}
		if attempt == idAttempts {
			return 0, fmt.Errorf("create user: ids taken %d times in a row", attempt)
		}
	}
}

func (s *mongoStore) userByName(ctx context.Context, username string) (int64, []byte, error) {
	var u struct {
		ID   int64  `bson:"_id"`
		Hash []byte `bson:"password_hash"`
	}
	err := s.users.FindOne(ctx, bson.D{{Key: "username", Value: username}}).Decode(&u)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil, errNotFound
	}
	return u.ID, u.Hash, err
}

func (s *mongoStore) createSession(ctx context.Context, token string, userID int64, now time.Time) error {
	_, err := s.sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: token}, {Key: "user_id", Value: userID}, {Key: "created_at", Value: now.UnixMicro()}})
	return err
}

func (s *mongoStore) sessionUser(ctx context.Context, token string) (int64, error) {
	var sess struct {
		UserID int64 `bson:"user_id"`
	}
	err := s.sessions.FindOne(ctx, bson.D{{Key: "_id", Value: token}}).Decode(&sess)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, errNotFound
	}
	return sess.UserID, err
}

func newMongoItem(id, owner int64, in newItem, now time.Time) mongoItem {
	us := now.UnixMicro()
	return mongoItem{ID: id, Bucket: in.Bucket, Title: in.Title, Owner: owner, Payload: string(in.Payload), CreatedUs: us, UpdatedUs: us}
}

func (s *mongoStore) createItem(ctx context.Context, owner int64, in newItem, now time.Time) (item, error) {
	ids, err := s.insertItems(ctx, owner, []newItem{in}, now)
	if err != nil {
		return item{}, err
	}
	return newMongoItem(ids[0], owner, in, now).item(), nil
}

func (s *mongoStore) createItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error) {
	if len(in) == 0 {
		return nil, nil
	}
	return s.insertItems(ctx, owner, in, now)
}

// insertItems inserts the items in order and returns their ids. The insert
// is ordered: at the first failure none after it is written. A failure on
// an id handed out twice (see nextIDs) reserves new ids for that item and
// the rest and goes on; other failures end it with the ones before kept,
// and their ids, like a sequence's, are not given back.
func (s *mongoStore) insertItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error) {
	ids := make([]int64, 0, len(in))
	for attempt := 1; len(in) > 0; attempt++ {
		skip := idSkip(attempt)
		first, err := s.nextIDs(ctx, "items", len(in)+skip)
		if err != nil {
			return nil, err
		}
		first += int64(skip)
		docs := make([]any, len(in))
		for i, n := range in {
			docs[i] = newMongoItem(first+int64(i), owner, n, now)
		}
		if len(docs) == 1 {
			_, err = s.items.InsertOne(ctx, docs[0])
		} else {
			_, err = s.items.InsertMany(ctx, docs)
		}
		done := len(in)
		if err != nil {
			var bwe mongo.BulkWriteException
			switch {
			case !mongo.IsDuplicateKeyError(err) || attempt == idAttempts:
				return nil, err
			case len(docs) == 1:
				done = 0
			case errors.As(err, &bwe) && len(bwe.WriteErrors) == 1:
				done = bwe.WriteErrors[0].Index
			default:
				return nil, err
			}
		}
		for i := range done {
			ids = append(ids, first+int64(i))
		}
		in = in[done:]
	}
	return ids, nil
}

func (s *mongoStore) getItem(ctx context.Context, id int64) (item, error) {
	var m mongoItem
	err := s.items.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return item{}, errNotFound
	}
	return m.item(), err
}

func (s *mongoStore) updateItem(ctx context.Context, id int64, p itemPatch, now time.Time) (item, error) {
	set := bson.D{{Key: "updated_at", Value: now.UnixMicro()}}
	if p.Title != nil {
		set = append(set, bson.E{Key: "title", Value: *p.Title})
	}
	if p.Payload != nil {
		set = append(set, bson.E{Key: "payload", Value: string(p.Payload)})
	}
	var m mongoItem
	err := s.items.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return item{}, errNotFound
	}
	return m.item(), err
}

func (s *mongoStore) deleteItem(ctx context.Context, id int64) error {
	res, err := s.items.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return err
	}
	if res.DeletedCount == 0 {
		return errNotFound
	}
	return nil
}

// newestFirst is the list order, as the list indexes serve it.
var newestFirst = bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}

func (s *mongoStore) listItems(ctx context.Context, bucket int64, hasBucket bool, limit int, dst []item) ([]item, error) {
	filter := bson.D{}
	if hasBucket {
		filter = bson.D{{Key: "bucket", Value: bucket}}
	}
	cur, err := s.items.Find(ctx, filter, options.Find().SetSort(newestFirst).SetLimit(int64(limit)))
	if err != nil {
		return dst, err
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var m mongoItem
		if err := cur.Decode(&m); err != nil {
			return dst, err
		}
		dst = append(dst, m.item())
	}
	return dst, cur.Err()
}
