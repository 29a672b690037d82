/**
 * A list's view written as the API's query string (Drupal's long filter form), to be parsed and
 * checked by the API's own parser (reads.ts): whatever a page filters by, the API's grammar and
 * policy say whether it may.
 */
export class ApiQuery {
  private readonly params = new URLSearchParams();
  private n = 0;

  /** A condition, in the root group or in `memberOf` (a group's key). */
  condition(path: string, operator: string, value?: string | string[], memberOf?: string): this {
    const key = `c${this.n++}`;
    this.params.set(`filter[${key}][condition][path]`, path);
    this.params.set(`filter[${key}][condition][operator]`, operator);
    if (Array.isArray(value)) value.forEach((v, i) => this.params.set(`filter[${key}][condition][value][${i}]`, v));
    else if (value !== undefined) this.params.set(`filter[${key}][condition][value]`, value);
    if (memberOf) this.params.set(`filter[${key}][condition][memberOf]`, memberOf);
    return this;
  }

  /** A group of conditions joined by `conjunction`; returns its key, for the conditions' `memberOf`. */
  group(conjunction: 'AND' | 'OR'): string {
    const key = `g${this.n++}`;
    this.params.set(`filter[${key}][group][conjunction]`, conjunction);
    return key;
  }

  set(name: string, value: string): this {
    this.params.set(name, value);
    return this;
  }

  toString(): string {
    return this.params.toString();
  }
}
